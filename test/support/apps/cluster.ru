# frozen_string_literal: true

# For cluster tests: which process answered, the VM's class serial, a request
# that hangs (until its worker is killed), and the rendezvous gate.
require "json"
require "socket"
require "rack/utils"

app = lambda do |env|
  query = Rack::Utils.parse_query(env["QUERY_STRING"])
  case env["PATH_INFO"]
  when "/hang" then sleep
  when "/gate"
    UNIXSocket.open(query.fetch("path")) { |s| s.write("entered\r\n") && s.gets }
  end
  body = JSON.generate("pid" => Process.pid, "class_serial" => RubyVM.stat[:class_serial])
  [200, { "content-type" => "application/json" }, [body]]
end

run app
