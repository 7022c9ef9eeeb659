# frozen_string_literal: true

require "socket"
require "rack/lint"
require "spindle/config"
require "spindle/log"
require "spindle/listener"
require "spindle/request/handler"
require "spindle/engine/outbox"

# Drives Spindle::Handler in-process over a real socket pair: write request bytes
# on the client side, serve one request, read what the server wrote.
module HandlerHarness
  Served = Struct.new(:outcome, :raw, :status, :headers, :body, keyword_init: true)

  FakeListener = Struct.new(:server_name, :server_port) do
    def unix? = true
    def proxy_protocol? = false
    def tls? = false
  end

  def serve(app, request, lint: true, **config)
    client, server = UNIXSocket.pair
    handler = Spindle::Handler.new(lint ? Rack::Lint.new(app) : app, build_config(**config), quiet_log,
                                   multithread: false)
    conn = handler.open_connection(server, FakeListener.new("localhost", "80"),
                                   Spindle::Engine::Outbox.new(server, build_config(**config)))
    client.write(request)
    read_request(conn)
    outcome = handler.serve(conn)
    server.close unless outcome == :hijacked
    parse_response(outcome, client.read)
  ensure
    client&.close
  end

  def build_config(**values) = Spindle::Config.new(values)

  def quiet_log
    @log_out = StringIO.new
    @log_err = StringIO.new
    Spindle::Log.new(out: @log_out, err: @log_err, quiet: true)
  end

  def logged_errors = @log_err.string

  private

  def read_request(conn)
    20.times do
      return if conn.read_nonblock == :data && conn.advance == :complete

      conn.io.wait_readable(1)
    end
    flunk "request never completed"
  end

  def parse_response(outcome, raw)
    head, body = raw.split("\r\n\r\n", 2)
    status_line, *lines = head.to_s.split("\r\n")
    headers = lines.map { |l| l.split(": ", 2) }
    Served.new(outcome: outcome, raw: raw, status: status_line.to_s.split(" ")[1].to_i,
               headers: headers, body: body)
  end
end
