# frozen_string_literal: true

# A streaming response: no content-length, chunks produced one at a time.
#
# Query parameters (all optional):
#   count=N   chunks to send after the first (default 2)
#   gate=P    after the first chunk, say "entered" at rendezvous P and wait for "go"
#   closed=P  when the server calls body.close, say "closed" at rendezvous P
#   fail=1    raise after the first chunk (and after the gate)
#   endless=1 after the gate, keep producing 16 KiB chunks (bounded) so a server
#             writing to a vanished client must notice
#   style=call  a Rack 3 streaming body (responds to #call, not #each)
require "socket"
require "rack/utils"

say = lambda do |path, message, wait:|
  UNIXSocket.open(path) do |socket|
    socket.write("#{message}\r\n")
    socket.gets if wait
  end
end

chunks = lambda do |params, &emit|
  emit.call("chunk-0\n")
  say.call(params["gate"], "entered", wait: true) if params["gate"]
  raise IOError, "spindle-test-boom: the body failed mid-stream" if params["fail"]

  if params["endless"]
    filler = "x" * 16_384
    16_384.times { emit.call(filler) } # 256 MiB: far past any socket buffer
  else
    Integer(params.fetch("count", "2")).times { |i| emit.call("chunk-#{i + 1}\n") }
  end
end

# Plain classes, not Structs: a Struct answers #each over its members, and a
# server that sees #each must treat the body as enumerable.
each_body = Class.new do
  define_method(:initialize) { |params| @params = params }
  define_method(:each) { |&block| chunks.call(@params, &block) }
  define_method(:close) { say.call(@params["closed"], "closed", wait: false) if @params["closed"] }
end

call_body = Class.new do
  define_method(:initialize) { |params| @params = params }
  define_method(:call) do |stream|
    chunks.call(@params) { |data| stream.write(data) }
  ensure
    stream.close
    say.call(@params["closed"], "closed", wait: false) if @params["closed"]
  end
end

streaming = lambda do |env|
  # HEAD: no body, length unknown. The server must not frame an empty chunked
  # body ("0\r\n\r\n") after the head either.
  return [200, { "content-type" => "text/plain" }, []] if env["REQUEST_METHOD"] == "HEAD"

  params = Rack::Utils.parse_query(env["QUERY_STRING"])
  body = params["style"] == "call" ? call_body.new(params) : each_body.new(params)
  [200, { "content-type" => "text/plain" }, body]
end

run Rack::Lint.new(streaming)
