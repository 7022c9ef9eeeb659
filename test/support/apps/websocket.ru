# frozen_string_literal: true

# A WebSocket echo server, reached three ways (the path picks it):
#   /partial_hijack  a 101 with a rack.hijack header: Spindle writes the head,
#                    the callable speaks WebSocket on the socket
#   /full_hijack     env["rack.hijack"]: the app writes the 101 itself
#   /stream          a 101 with a Rack 3 streaming body (call(stream))
# Every text message comes back as "echo: <message>"; a close frame is
# answered and ends the connection. Anything else gets a 200, so
# assert_still_serving works against this app too. websocket-driver speaks
# the protocol: the frames are a real implementation's, not the test's.
require "websocket/driver"

# The socket as websocket-driver wants it: env, url and write. When Spindle
# already sent the 101 (partial hijack, streaming body), the driver's own
# handshake response is the one write that must not reach the client.
class WebSocketEchoSession
  attr_reader :env

  def initialize(env, io, head_sent:)
    @env = env
    @io = io
    @skip_handshake = head_sent
  end

  def url = "ws://#{env['HTTP_HOST']}#{env['PATH_INFO']}"

  def write(data)
    return @skip_handshake = false if @skip_handshake

    @io.write(data)
  end

  # Runs until the client closes; always closes the socket.
  def run
    driver = WebSocket::Driver.rack(self)
    open = true
    driver.on(:message) { |event| driver.text("echo: #{event.data}") }
    driver.on(:close) { open = false }
    driver.start
    while open
      data = @io.readpartial(16 * 1024)
      driver.parse(data)
    end
  rescue EOFError, IOError, SystemCallError
    nil # the client went away mid-session
  ensure
    @io.close unless @io.closed?
  end
end

upgrade_headers = lambda do |env|
  accept = WebSocket::Driver::Hybi.generate_accept(env["HTTP_SEC_WEBSOCKET_KEY"])
  { "upgrade" => "websocket", "connection" => "upgrade", "sec-websocket-accept" => accept }
end

websocket = lambda do |env|
  unless WebSocket::Driver.websocket?(env)
    return [200, { "content-type" => "text/plain", "content-length" => "15" }, ["not a websocket"]]
  end

  case env["PATH_INFO"]
  when "/full_hijack"
    WebSocketEchoSession.new(env, env["rack.hijack"].call, head_sent: false).run
    [200, {}, []] # ignored: the app owns the socket
  when "/partial_hijack"
    takeover = ->(io) { WebSocketEchoSession.new(env, io, head_sent: true).run }
    [101, upgrade_headers.call(env).merge("rack.hijack" => takeover), []]
  else
    [101, upgrade_headers.call(env), ->(stream) { WebSocketEchoSession.new(env, stream, head_sent: true).run }]
  end
end

run websocket
