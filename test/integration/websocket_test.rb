# frozen_string_literal: true

require_relative "../support/spindle_process"
require_relative "../support/websocket_client"

# WebSockets on every engine, with a real client (websocket-driver), through
# each way a Rack app can take a connection over: a 101 with a rack.hijack
# header (partial hijack), env["rack.hijack"] (full hijack) and a 101 with a
# Rack 3 streaming body. Frames go both ways, then the closing handshake; the
# server still serves afterwards.
module WebSocketEchoTests
  def test_partial_hijack = assert_echoes("/partial_hijack")
  def test_full_hijack = assert_echoes("/full_hijack")
  def test_streaming_body = assert_echoes("/stream")

  private

  def assert_echoes(path)
    client = WebSocketClient.new(server.host, server.port, path)
    %w[one two three].each do |text|
      client.send_text(text)
      assert_equal "echo: #{text}", client.receive, "the app answers each frame on #{path}"
    end
    assert_equal 1000, client.close, "a clean closing handshake"
    assert_still_serving
  rescue WebSocketClient::Failure => e
    flunk "#{path}: #{e.message}\n#{server.output}"
  end
end

%w[blocking threads fibers hybrid].each do |engine|
  test_class = Class.new(SpindleIntegrationTest) do
    serve_with "-b", SpindleIntegrationTest::LOOPBACK, "--engine", engine, app_path("websocket")
    include WebSocketEchoTests
  end
  Object.const_set("WebSocket#{engine.capitalize}EngineTest", test_class)
end
