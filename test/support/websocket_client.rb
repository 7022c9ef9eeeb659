# frozen_string_literal: true

require "socket"
require "websocket/driver"
require_relative "http_client"

# A WebSocket client over a real TCP socket, speaking through websocket-driver
# (a real implementation, so a server that gets the upgrade wrong fails the
# handshake as a browser would). Every wait has a deadline.
class WebSocketClient
  class Failure < StandardError; end

  attr_reader :url

  # headers: extra handshake headers (Action Cable checks Origin); protocols:
  # the subprotocols offered, as a browser's WebSocket(url, protocols).
  def initialize(host, port, path, deadline: HttpClient::DEFAULT_DEADLINE, headers: {}, protocols: [])
    @socket = TCPSocket.new(host, port)
    @url = "ws://#{host}:#{port}#{path}"
    @messages = []
    @open = false
    @closed = nil
    @eof = false
    @error = nil
    @driver = WebSocket::Driver.client(self, protocols: protocols)
    headers.each { |name, value| @driver.set_header(name, value) }
    @driver.on(:open) { @open = true }
    @driver.on(:message) { |event| @messages << event.data }
    @driver.on(:close) { |event| @closed = event }
    @driver.on(:error) { |event| @error = event.message }
    @driver.start
    pump("the handshake", deadline) { @open }
  end

  # The driver writes frames through this. Its answer to a server's close
  # frame may find the connection already ended: nothing to tell then.
  def write(data)
    @socket.write(data)
  rescue Errno::EPIPE, Errno::ECONNRESET
    nil
  end

  def send_text(text) = @driver.text(text)

  def receive(deadline: HttpClient::DEFAULT_DEADLINE)
    pump("a message", deadline) { @messages.any? }
    @messages.shift
  end

  # The closing handshake: our close frame, the server's answer. Returns the
  # server's close code.
  def close(deadline: HttpClient::DEFAULT_DEADLINE)
    @driver.close
    pump("the server's close frame", deadline) { @closed }
    @closed.code
  ensure
    @socket.close
  end

  def abort = @socket.close

  # Waits until the server ends the connection: its close code when it sent a
  # close frame, :eof when the connection just ended (the process holding
  # it exited or closed it without one).
  def wait_for_end(deadline: HttpClient::DEFAULT_DEADLINE)
    pump("the end of the connection", deadline) { @closed || @eof }
    @socket.close
    @closed ? @closed.code : :eof
  end

  # Whether the connection is still open: reads what has arrived, without
  # waiting.
  def open?
    until @closed || @eof
      data = read_available
      break if data == :wait_readable

      data.nil? ? @eof = true : @driver.parse(data)
    end
    !(@closed || @eof)
  end

  private

  def pump(what, deadline)
    limit = clock + deadline
    until yield
      raise Failure, "waiting for #{what}: #{@error}" if @error

      remaining = limit - clock
      raise Failure, "no #{what} within #{deadline}s" if remaining <= 0
      next unless @socket.wait_readable(remaining)

      data = read_available
      @eof = true if data.nil?
      return if @eof && yield
      raise Failure, "the server closed the connection while waiting for #{what}" if @eof

      @driver.parse(data) unless data == :wait_readable
    end
  end

  # What has arrived; nil once the connection ended (a reset too).
  def read_available
    @socket.read_nonblock(16 * 1024, exception: false)
  rescue Errno::ECONNRESET
    nil
  end

  def clock = Process.clock_gettime(Process::CLOCK_MONOTONIC)
end
