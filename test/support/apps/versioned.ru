# frozen_string_literal: true

# A host of the multi-host tests (test/topology/): which code and which host
# answered. The version is read from the file named by
# SPINDLE_TOPOLOGY_VERSION_FILE when the app loads, so a hot restart (USR2)
# after the file changed is observably new code; a version starting with
# "broken" fails to load.
#   GET /health   200 "ok" (the hosts run with --health-path /health, so the
#                 server answers it; this is for a server started without)
#   GET /version  the version
#   POST anything the body's size and SHA-256, so the client checks it arrived whole
#   GET anything  "VERSION HOST"
# digest/sha2, not digest: Digest autoloads SHA256 on first use, and two
# threads doing that at once raise "Digest::Base cannot be directly inherited".
require "digest/sha2"

version = File.read(ENV.fetch("SPINDLE_TOPOLOGY_VERSION_FILE")).strip
# A release that cannot load, as an app with a syntax error: its hot restart fails.
raise "version #{version} fails to load on purpose" if version.start_with?("broken")
host = ENV.fetch("SPINDLE_TOPOLOGY_HOST", "?")

app = lambda do |env|
  body = case env["PATH_INFO"]
         when "/health" then "ok"
         when "/version" then version
         else
           if env["REQUEST_METHOD"] == "POST"
             data = env["rack.input"].read
             "#{data.bytesize} #{Digest::SHA256.hexdigest(data)}"
           else
             "#{version} #{host}"
           end
         end
  [200, { "content-type" => "text/plain", "content-length" => body.bytesize.to_s,
          "x-app-version" => version, "x-host" => host }, [body]]
end

run app
