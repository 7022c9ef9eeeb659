# frozen_string_literal: true

require "socket"

# A deliberately small HTTP/1.1 client that talks raw bytes over a real socket.
#
# Integration tests need to send what Net::HTTP would refuse to send (pipelined
# requests, half-written bodies, smuggling vectors) and to see exactly what the
# server wrote back (interim 1xx responses, chunk boundaries, whether the
# connection was closed). Every read takes a deadline, so a server that never
# answers fails the test instead of hanging the suite.
module HttpClient
  DEFAULT_DEADLINE = 10 # seconds; a bound on a hang, not a performance threshold
  READ_SIZE = 64 * 1024

  # Raised when the peer sent nothing for the whole deadline.
  class Timeout < StandardError; end

  # Raised when the bytes received are not a well-formed HTTP/1.x response.
  class ProtocolError < StandardError; end

  # One response as it was received. +headers+ keeps every field line in order
  # with the name exactly as sent, so tests can check case and repetition.
  Response = Struct.new(:version, :status, :reason, :headers, :body, :chunks,
                        :trailers, :interim, :framing, keyword_init: true) do
    # All values of a field (case-insensitive name), in order.
    def values(name)
      name = name.downcase
      headers.select { |(key, _)| key.downcase == name }.map(&:last)
    end

    # The field's values joined the way RFC 9110 combines repeated fields.
    def [](name)
      found = values(name)
      found.empty? ? nil : found.join(", ")
    end

    def header_names
      headers.map(&:first)
    end

    def close?
      (self["connection"] || "").downcase.split(/\s*,\s*/).include?("close")
    end

    def to_s
      lines = ["HTTP/#{version} #{status} #{reason}"]
      headers.each { |(key, value)| lines << "#{key}: #{value}" }
      "#{lines.join("\n")}\n\n#{body.inspect}"
    end
  end

  module_function

  def connect(host, port, deadline: DEFAULT_DEADLINE)
    Connection.new(Socket.tcp(host, port, connect_timeout: deadline))
  end

  def connect_unix(path)
    Connection.new(UNIXSocket.new(path))
  end

  # Builds the bytes of one request. +headers+ is an Array of [name, value]
  # pairs (or a Hash); a Host field is added for HTTP/1.1 unless given.
  def request(method, target, headers = [], body: nil, version: "1.1")
    fields = headers.to_a
    if version == "1.1" && fields.none? { |(name, _)| name.casecmp?("host") }
      fields = [["Host", "test.invalid"]] + fields
    end
    if body && fields.none? { |(name, _)| name.casecmp?("content-length") || name.casecmp?("transfer-encoding") }
      fields += [["Content-Length", body.bytesize.to_s]]
    end
    head = +"#{method} #{target} HTTP/#{version}\r\n"
    fields.each { |(name, value)| head << "#{name}: #{value}\r\n" }
    head << "\r\n"
    body ? head + body : head
  end

  # Encodes +pieces+ as a chunked body (with the last-chunk and empty trailer).
  def chunked(*pieces)
    encoded = pieces.map { |piece| "#{piece.bytesize.to_s(16)}\r\n#{piece}\r\n" }.join
    "#{encoded}0\r\n\r\n"
  end

  # A buffered, deadline-bound reader/writer over one socket.
  class Connection
    attr_reader :socket

    def initialize(socket)
      @socket = socket
      @buffer = String.new(encoding: Encoding::BINARY)
      @eof = false
      @reset = false
    end

    def write(bytes, deadline: DEFAULT_DEADLINE)
      bytes = bytes.b
      limit = clock + deadline
      until bytes.empty?
        written = @socket.write_nonblock(bytes, exception: false)
        if written == :wait_writable
          remaining = limit - clock
          raise Timeout, "peer did not accept data for #{deadline}s" if remaining <= 0 || !@socket.wait_writable(remaining)
        else
          bytes = bytes.byteslice(written..)
        end
      end
      self
    end

    # Reads the next response. Interim (1xx) responses are collected into the
    # final response's +interim+; with +interim: false+ a 1xx is returned on its
    # own instead. +head: true+ means the request was HEAD (so no body follows).
    def read_response(head: false, interim: true, deadline: DEFAULT_DEADLINE)
      limit = clock + deadline
      collected = []
      loop do
        response = read_head(deadline: limit - clock)
        if response.status.between?(100, 199)
          return response unless interim

          collected << response
          next
        end
        response.interim = collected
        read_body(response, head: head, deadline: limit - clock)
        return response
      end
    end

    # Reads a status line and header section; the body is left unread.
    def read_head(deadline: DEFAULT_DEADLINE)
      limit = clock + deadline
      head_end = nil
      until (head_end = @buffer.index("\r\n\r\n"))
        fill(limit, "the end of a response head (got #{@buffer.inspect})")
      end
      head = @buffer.byteslice(0, head_end)
      @buffer = @buffer.byteslice((head_end + 4)..)
      parse_head(head)
    end

    # Reads the next chunk of a chunked body; nil at the last-chunk (trailers consumed).
    def read_chunk(deadline: DEFAULT_DEADLINE, trailers: nil)
      limit = clock + deadline
      size_line = read_line(limit)
      raise ProtocolError, "bad chunk size line #{size_line.inspect}" unless size_line =~ /\A\h+(;.*)?\z/

      size = size_line.to_i(16)
      if size.zero?
        while (line = read_line(limit)) != ""
          trailers << line if trailers
        end
        return nil
      end
      data = read_exactly(size, deadline: limit - clock)
      crlf = read_exactly(2, deadline: limit - clock)
      raise ProtocolError, "chunk data not followed by CRLF: #{crlf.inspect}" unless crlf == "\r\n"

      data
    end

    def read_exactly(size, deadline: DEFAULT_DEADLINE)
      limit = clock + deadline
      fill(limit, "#{size} bytes (got #{@buffer.bytesize})") while @buffer.bytesize < size
      data = @buffer.byteslice(0, size)
      @buffer = @buffer.byteslice(size..)
      data
    end

    # Reads whatever arrives until the peer closes. A reset counts as a close.
    def read_until_eof(deadline: DEFAULT_DEADLINE)
      limit = clock + deadline
      fill(limit, "the peer to close the connection (got #{@buffer.bytesize} bytes)") until @eof
      data = @buffer
      @buffer = String.new(encoding: Encoding::BINARY)
      data
    end

    # Waits until at least one more byte arrives (or EOF) and returns all buffered bytes.
    def read_some(deadline: DEFAULT_DEADLINE)
      fill(clock + deadline, "any data") if @buffer.empty?
      data = @buffer
      @buffer = String.new(encoding: Encoding::BINARY)
      data
    end

    def buffered
      @buffer.dup
    end

    def eof?
      @eof
    end

    # True when the connection ended with a reset (ECONNRESET), which
    # discards what the peer sent and this side had not read yet, rather
    # than with an end of stream.
    def reset?
      @reset
    end

    def close
      @socket.close unless @socket.closed?
    end

    def closed?
      @socket.closed?
    end

    # Closes with SO_LINGER 0 so the peer sees a reset rather than a FIN.
    def reset!
      @socket.setsockopt(Socket::SOL_SOCKET, Socket::SO_LINGER, [1, 0].pack("ii"))
      close
    end

    private

    def clock
      Process.clock_gettime(Process::CLOCK_MONOTONIC)
    end

    def fill(limit, waiting_for)
      raise ProtocolError, "connection closed while waiting for #{waiting_for}" if @eof

      loop do
        chunk = @socket.read_nonblock(READ_SIZE, exception: false)
        case chunk
        when :wait_readable
          remaining = limit - clock
          raise Timeout, "timed out waiting for #{waiting_for}" if remaining <= 0 || !@socket.wait_readable(remaining)
        when nil
          @eof = true
          return
        else
          @buffer << chunk
          return
        end
      end
    rescue Errno::ECONNRESET, Errno::EPIPE => e
      @eof = true
      @reset = e.is_a?(Errno::ECONNRESET)
    end

    def read_line(limit)
      fill(limit, "a line (got #{@buffer.inspect})") until (line_end = @buffer.index("\r\n"))
      line = @buffer.byteslice(0, line_end)
      @buffer = @buffer.byteslice((line_end + 2)..)
      line
    end

    def parse_head(head)
      status_line, *field_lines = head.split("\r\n", -1)
      match = %r{\AHTTP/(\d\.\d) (\d{3}) ?(.*)\z}.match(status_line)
      raise ProtocolError, "bad status line #{status_line.inspect}" unless match

      headers = field_lines.map do |line|
        name, value = line.split(":", 2)
        raise ProtocolError, "bad field line #{line.inspect}" if value.nil? || name.empty? || name =~ /\s/

        [name, value.strip]
      end
      Response.new(version: match[1], status: match[2].to_i, reason: match[3],
                   headers: headers, body: nil, chunks: nil, trailers: nil, interim: [])
    end

    def read_body(response, head:, deadline:)
      limit = clock + deadline
      response.body = String.new(encoding: Encoding::BINARY)
      if head || [204, 304].include?(response.status)
        response.framing = :none
      elsif (response["transfer-encoding"] || "").downcase.split(/\s*,\s*/).last == "chunked"
        read_chunked_body(response, limit)
      elsif (length = response["content-length"])
        raise ProtocolError, "bad content-length #{length.inspect}" unless length =~ /\A\d+\z/

        response.framing = :content_length
        response.body = read_exactly(length.to_i, deadline: limit - clock)
      else
        response.framing = :close
        response.body = read_until_eof(deadline: limit - clock)
      end
    end

    def read_chunked_body(response, limit)
      response.framing = :chunked
      response.chunks = []
      response.trailers = []
      while (chunk = read_chunk(deadline: limit - clock, trailers: response.trailers))
        response.chunks << chunk
        response.body << chunk
      end
    end
  end
end
