# frozen_string_literal: true

# For the systemd tests: which process answered, and which of the variables
# systemd passes it still sees (socket activation's must be gone once
# Spindle took the sockets), and the client address it was given.
require "json"

VARIABLES = %w[LISTEN_FDS LISTEN_PID LISTEN_FDNAMES NOTIFY_SOCKET WATCHDOG_USEC WATCHDOG_PID RACK_ENV].freeze

run(lambda do |env|
  body = JSON.generate("pid" => Process.pid, "remote_addr" => env["REMOTE_ADDR"],
                       "env" => VARIABLES.to_h { |name| [name, ENV.fetch(name, nil)] })
  [200, { "content-type" => "application/json", "content-length" => body.bytesize.to_s }, [body]]
end)
