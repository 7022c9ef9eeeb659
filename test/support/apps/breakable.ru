# frozen_string_literal: true

# For cluster tests of restarts that deploy broken code: loading this app
# fails while the file named by SPINDLE_TEST_BROKEN says "raise", and hangs
# while it says "hang". Otherwise it answers with the worker's pid.
require "json"

flag = ENV.fetch("SPINDLE_TEST_BROKEN")
case File.exist?(flag) && File.read(flag)
when "raise" then raise "this deploy is broken on purpose"
when "hang" then sleep
end

run ->(_env) { [200, { "content-type" => "application/json" }, [JSON.generate("pid" => Process.pid)]] }
