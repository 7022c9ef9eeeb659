# frozen_string_literal: true

require_relative "../http/parser"
require_relative "../http/input"
require_relative "../http/read_buffer"
require_relative "../engine/deadlines"
require_relative "../process/handed_sockets"

module Spindle
  # One client connection: its socket, its read buffer (HTTP::ReadBuffer), the
  # parser and the body being collected, and 100-continue. Every engine reads
  # requests through this class; they differ only in how they wait for the
  # socket. Its policies live with their owners: response bytes go out
  # through its Engine::Outbox, deadlines are Engine::Deadlines', and what
  # happens after a response is the engine's, from the Handler's outcome.
  class Connection
    include HTTP::ReadBuffer

    READ_SIZE = HTTP::ReadBuffer::SIZE
    CONTINUE = "HTTP/1.1 100 Continue\r\n\r\n"
    RACK_INPUT = "rack.input"

    # marks: this connection's deadlines, kept for Engine::Deadlines.
    attr_reader :io, :requests, :env_template, :outbox, :marks

    # proxy_protocol: the listener's bind asks for a PROXY protocol header
    # before the first request (HTTP::ProxyHeader).
    #
    # tls: io is a TLS::Socket, its handshake still to come. Until the
    # handshake is done, the connection counts as mid-request, not idle: it
    # runs under the header deadline (Engine::Deadlines), a stalled one is
    # never taken for a spare keep-alive connection, and it is closed when
    # the deadline passes (no 408 can be written before the handshake is
    # done). Once done, the connection is as a plain one just accepted.
    def initialize(io, config, env_template, outbox, proxy_protocol: false, tls: false)
      @io = io
      @proxy_pending = proxy_protocol
      @tls = tls
      @handshaking = tls
      @env_template = env_template
      @outbox = outbox
      init_read_buffer
      @parser = HTTP::Parser.new(**config.parser_limits)
      @parser.env_template = env_template # each request's env is its copy, made in C
      @body = String.new(encoding: Encoding::BINARY)
      @input = HTTP::Input.new(config.body_spool_threshold)
      @requests = 0
      # Accepted: idle until a byte arrives.
      @marks = Engine::Deadlines::Marks.new(nil, nil, nil, Process.clock_gettime(Process::CLOCK_MONOTONIC))
      @continue_sent = @request_started = @response_started = @hijacked = @waiting = @refused = false
      @linger_left = @linger_ends = nil
      @lingering = false
    end

    # Parses what has been read. :complete when a whole request is in, else
    # :incomplete; raises HTTP::ParseError for input that must be refused, and
    # HTTP::ProxyHeader::Error for a PROXY header that must be.
    def advance
      @request_started = true
      return :incomplete if @proxy_pending && !take_proxy_header

      while true # not `loop`: no block frame and StopIteration rescue per request
        parse_buffered(@parser, @body)
        @input.drain(@body) unless @body.empty?
        return :complete if @parser.done?

        send_continue if @parser.head_complete? && !@continue_sent
        return :incomplete unless unparsed?
      end
    end

    # Waits until the client sends more (fiber engines: yields). Deadlines are
    # the caller's: see Engine::DeadlineSweeper.
    def wait_for_client
      @waiting = true
      @io.wait_readable
    rescue IOError
      nil # closed (a failed write): the read that follows sees the end
    ensure
      @waiting = false
    end

    # True until the PROXY protocol header of a bind that wants one is in:
    # nothing has been parsed as HTTP, so nothing may be answered as HTTP.
    def awaiting_proxy_header? = @proxy_pending

    # True while #wait_for_client waits.
    def waiting_for_client? = @waiting

    attr_reader :tls
    alias tls? tls # an attr_reader's alias keeps its fast call: asked after every read

    # True between requests: no byte of the next one has arrived yet (since
    # marks.idle_since: accepted or its TLS handshake done, or its last
    # response ended).
    def idle? = !@request_started && !@handshaking

    # Its next request has begun to arrive, seen before it is read (the
    # threads engine's Park): self. A TimedConnection notes the time.
    def arriving = self

    def head_complete? = @parser.head_complete?
    def body_size = @parser.body_size
    def keep_alive? = @parser.keep_alive?

    # The env of the complete request, finished: its rack.input is the body
    # read so far. Once per request, before the app is called.
    def finish_request_env
      env = @parser.env
      env[RACK_INPUT] = @input.finish(@body)
      @body.clear
      env
    end

    # The request is over, whatever its outcome (hijacked too): its spooled
    # body, if it had one, is closed (HTTP::Input#release).
    def release_input = @input.release

    # The env of the request being served (the parser's, until the next
    # request); nil until the parser has made it, at the request's first field.
    def current_env = @parser.env

    # Readies the connection for the next request on it.
    def reset_for_next_request
      @requests += 1
      @marks.next_request(Process.clock_gettime(Process::CLOCK_MONOTONIC))
      @parser.reset
      @continue_sent = @request_started = @response_started = false
      rewind_if_consumed
    end

    # The response writer's way out: see Engine::Outbox#write.
    def write(data, held = false)
      @response_started = true
      @outbox.write(data, held)
    end

    # Everything written so far is out, before code writes to #io itself.
    def flush = @outbox.flush

    # True once any byte of the current response has been written.
    def response_started? = @response_started

    # rack.hijack (env's, or a response header's): the app takes the socket;
    # the server forgets it.
    def hand_over
      @outbox.flush
      @hijacked = true
      HandedSockets.add(@io)
    end

    def hijacked? = @hijacked

    # An error response (400, 408, 413, 431 ...) answered a request before
    # it was read whole: the client may still be sending it, so the close
    # lingers (Engine::LingeringClose) whatever is in hand.
    def refused! = @refused = true
    def refused? = @refused

    # Lingering close (Engine::LingeringClose): bytes it may still read and
    # drop (nil while the connection does not linger), and when it ends at
    # the latest (monotonic).
    attr_accessor :linger_left
    attr_reader :linger_ends, :lingering

    alias lingering? lingering # asked on every readable turn: a reader, no call frame

    # Begins a lingering close: no request is read from here on (what is
    # buffered is dropped), the write side is shut down (the client reads
    # the end of the responses, then end of stream), and up to bytes more
    # input may be dropped by #discard_input until ends.
    def stop_reading(bytes, ends)
      @linger_left = bytes
      @linger_ends = ends
      @lingering = true
      @input.discard
      release_read_buffer
      @io.close_write # TLS: its close_notify first (TLS::Socket#close_write)
    rescue IOError, SystemCallError
      nil # the client is gone: the next read says so
    end

    # Reads what the client sent and drops it, without waiting: the number
    # of bytes dropped, :wait, or :eof (end of stream, reset, closed). The
    # socket's own bytes: a TLS connection's records go undecrypted (no
    # response follows, and a TLS read could have to write).
    def discard_input
      got = @io.to_io.read_nonblock(READ_SIZE, @buffer, exception: false)
      return :wait if got == :wait_readable

      got ? got.bytesize : :eof
    rescue IOError, SystemCallError
      :eof
    end

    # Frees the buffers at once (see HTTP::ReadBuffer) and closes.
    def close
      @input.discard
      release_read_buffer
      @outbox.drop
      @io.close unless @hijacked || @io.closed?
    rescue IOError, SystemCallError
      nil
    end

    private

    # Once per connection, before the first request's env is made: the
    # client the header names becomes the env's REMOTE_ADDR and REMOTE_PORT.
    # A later "PROXY ..." line on the connection is an HTTP request line
    # like any other (and refused as one).
    def take_proxy_header
      header = parse_proxy_header or return false

      @proxy_pending = false
      if header.remote_addr
        @env_template["REMOTE_ADDR"] = header.remote_addr
        @env_template["REMOTE_PORT"] = header.remote_port
      end
      true
    end

    # The handshake's deadline was the head's: the first request gets its own.
    def handshake_done
      @handshaking = false
      @marks.next_request(Process.clock_gettime(Process::CLOCK_MONOTONIC))
    end

    # RFC 9110 §10.1.1: answer 100 only while the body is still to come.
    def send_continue
      @continue_sent = true
      return unless @parser.expect_continue? && !@parser.done? && !buffered?

      @outbox.write_all(CONTINUE)
    end
  end
end
