# frozen_string_literal: true

# For USR2 tests: which process answered, a gate for a request held in
# flight, and a boot the test can steer through files in the directory named
# by SPINDLE_TEST_BOOT_DIR (a USR2 successor loads this file again):
#   DIR/fail  exists: loading raises, as an app with a syntax error would.
#   DIR/hold  exists: it holds a rendezvous path; loading says "booting" there
#             and waits for "go", so the test knows a successor is mid-boot.
require "json"
require "socket"
require "rack/utils"

boot_dir = ENV.fetch("SPINDLE_TEST_BOOT_DIR", nil)
if boot_dir
  raise "broken on purpose (#{boot_dir}/fail exists)" if File.exist?(File.join(boot_dir, "fail"))

  hold = File.join(boot_dir, "hold")
  UNIXSocket.open(File.read(hold).strip) { |s| s.write("booting\r\n") && s.gets } if File.exist?(hold)
end

app = lambda do |env|
  if env["PATH_INFO"] == "/gate"
    path = Rack::Utils.parse_query(env["QUERY_STRING"]).fetch("path")
    UNIXSocket.open(path) { |s| s.write("entered\r\n") && s.gets }
  end
  body = JSON.generate("pid" => Process.pid)
  [200, { "content-type" => "application/json", "content-length" => body.bytesize.to_s }, [body]]
end

run Rack::Lint.new(app)
