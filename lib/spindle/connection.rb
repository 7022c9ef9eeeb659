# frozen_string_literal: true

require "socket"
require_relative "http/parser"
require_relative "http/input"
require_relative "engine/output_budget"

module Spindle
  # One client connection: its socket, the bytes read but not yet parsed, the
  # parser and the body being collected. Every engine reads requests through
  # this class; they differ only in how they wait for the socket.
  #
  # It is also the connection's rack.hijack callable, so a request costs no
  # closure for it.
  class Connection
    class WriteTimeout < StandardError; end

    READ_SIZE = 16 * 1024
    # While the server drains, a keep-alive connection idle this long is
    # closed. One idle for less is likely to send its next request any moment:
    # closing it then would fail that request, so it is answered instead, with
    # "connection: close".
    DRAIN_IDLE = 0.5
    # Output generated while writing (stream chunks, heads) that may wait in the
    # outbox for a slow reader; more than this and the writer waits instead.
    OUTBOX_LIMIT = 64 * 1024
    CONTINUE = "HTTP/1.1 100 Continue\r\n\r\n"
    RACK_INPUT = "rack.input"

    attr_reader :io, :listener, :requests, :env_template
    attr_accessor :deadline

    # defer_writes: the engine's selector writes what the outbox holds (see
    # #write); otherwise the writing thread or fiber does, at the end of each
    # response (#finish_output).
    def initialize(io, listener, config, env_template, defer_writes: false)
      @io = io
      @defer_writes = defer_writes
      @config = config
      @budget = nil # the process's Engine::OutputBudget, fetched once output waits
      @outbox = nil # response bytes the client has not taken yet, in order
      @outbox_own = 0 # bytes in it that only the outbox keeps (not held)
      @outbox_bytes = 0 # bytes in it, as counted in the budget
      @close_after_flush = false
      @listener = listener
      @write_timeout = config.write_timeout
      @env_template = env_template
      @buffer = String.new(capacity: READ_SIZE, encoding: Encoding::BINARY)
      @offset = 0
      @scratch = nil # only a connection that pipelines needs a second buffer
      @parser = HTTP::Parser.new(**config.parser_limits)
      @body = String.new(encoding: Encoding::BINARY)
      @input = HTTP::Input.new(config.body_spool_threshold)
      @requests = 0
      @idle_since = Process.clock_gettime(Process::CLOCK_MONOTONIC) # accepted: idle until a byte arrives
      @continue_sent = false
      @request_started = false
      @response_started = false
      @hijacked = false
      @deadline = nil
      @waiting = false
      @head_deadline = nil
      @body_started = nil
    end

    # Reads what the socket has, without waiting. :data, :wait or :eof.
    def read_nonblock
      if @offset == @buffer.bytesize
        @offset = 0
        got = @io.read_nonblock(READ_SIZE, @buffer, exception: false)
        @buffer.clear unless got.is_a?(String)
      else
        @scratch ||= String.new(capacity: READ_SIZE, encoding: Encoding::BINARY)
        got = @io.read_nonblock(READ_SIZE, @scratch, exception: false)
        @buffer << got if got.is_a?(String)
      end
      return :data if got.is_a?(String)

      got == :wait_readable ? :wait : :eof
    rescue Errno::ECONNRESET, Errno::EPIPE, Errno::ETIMEDOUT, IOError
      :eof
    end

    # Parses what has been read. :complete when a whole request is in, else
    # :incomplete; raises HTTP::ParseError for input that must be refused.
    def advance
      @request_started = true
      @parser.env ||= @env_template.dup
      loop do
        @offset = @parser.execute(@buffer, @offset, @body)
        @input.drain(@body)
        return :complete if @parser.done?

        send_continue if @parser.head_complete? && !@continue_sent
        return :incomplete if @offset >= @buffer.bytesize
      end
    end

    # Waits until the client sends more (fiber engines: yields). Deadlines are
    # the caller's: see Engine::DeadlineSweeper.
    def wait_for_client
      @waiting = true
      @io.wait_readable
    rescue IOError
      nil # closed (a failed #finish_output): the read that follows sees the end
    ensure
      @waiting = false
    end

    # True while #wait_for_client waits.
    def waiting_for_client? = @waiting

    # True when bytes of a next request are already here (pipelining).
    def buffered? = @offset < @buffer.bytesize

    # True between requests: no byte of the next one has arrived yet.
    def idle? = !@request_started

    # Since when the connection has been idle (accepted, or its last response
    # ended). Meaningful while #idle?.
    attr_reader :idle_since

    # Idle with nothing in hand or owed: no byte of a next request read, no
    # output waiting. What a server at its connection cap may close to let a
    # new client in (Engine::Eviction). A connection that never sent a request
    # counts: otherwise clients that connect and send nothing would hold every
    # slot for the whole keep-alive timeout.
    def idle_between_requests? = idle? && !@outbox && !buffered?

    # True when no byte the client sent waits on the socket unread, so closing
    # now fails no request it has sent. A peek: nothing is consumed, and it
    # never waits (not even under a Fiber::Scheduler, unlike #wait_readable).
    def quiet?
      peeked = @io.recv_nonblock(1, Socket::MSG_PEEK, exception: false)
      peeked == :wait_readable || peeked.nil? || peeked.empty? # nil or "": the client closed (3.3, 3.1)
    rescue IOError, SystemCallError
      true # closed or reset: nothing there to fail
    end

    # Idle for DRAIN_IDLE after serving at least one request: a keep-alive
    # connection a draining server may close. A new connection is not: its
    # first request is on its way (closing it would fail a client that did
    # nothing wrong). Nor is one whose client may already have sent its next
    # request: bytes waiting on the socket, or a response just sent.
    def closable_when_draining?(now = Process.clock_gettime(Process::CLOCK_MONOTONIC))
      idle? && !@outbox && @requests.positive? && now - @idle_since >= DRAIN_IDLE && !@io.wait_readable(0)
    end

    # When the connection must next make progress, given that it just did. Idle
    # between requests: the keep-alive timeout. Mid-head: an absolute deadline
    # from the first byte, so a head trickled a byte at a time still ends.
    # Mid-body: an idle deadline between reads.
    def next_deadline(now, timeouts)
      @deadline = if @outbox
                    now + timeouts.write_timeout
                  elsif idle?
                    now + timeouts.keepalive_timeout
                  elsif !@parser.head_complete?
                    @head_deadline ||= now + timeouts.header_timeout
                  else
                    body_deadline(now, timeouts)
                  end
    end

    # Idle deadline between body reads, and a rate deadline: a body trickled a
    # byte at a time must still average min_body_rate.
    def body_deadline(now, timeouts)
      idle = now + timeouts.read_timeout
      rate = timeouts.min_body_rate
      return idle unless rate

      @body_started ||= now
      [idle, @body_started + timeouts.read_timeout + (@parser.body_size.to_f / rate)].min
    end

    # What a timed-out client is told: nothing when it was idle, 408 otherwise.
    def timed_out_mid_request? = !idle? && !@outbox

    def keep_alive? = @parser.keep_alive?

    # The env of the complete request, with its rack.input.
    def env
      env = @parser.env
      env[RACK_INPUT] = @input.finish(@body)
      @body.clear
      env
    end

    # Readies the connection for the next request on it.
    def next_request
      finish_output unless @defer_writes
      @requests += 1
      @idle_since = Process.clock_gettime(Process::CLOCK_MONOTONIC)
      @parser.reset
      @continue_sent = false
      @request_started = false
      @response_started = false
      @head_deadline = nil
      @body_started = nil
      return unless @offset == @buffer.bytesize

      @buffer.clear
      @offset = 0
    end

    # Writes data, or puts what the socket will not take yet into the outbox.
    # held means data is part of a body the app already holds in memory, so
    # keeping it costs nothing more: it always may wait there. Other output
    # (stream chunks, heads) waits there only up to OUTBOX_LIMIT; beyond it,
    # this waits for the client, at most write_timeout at a time.
    #
    # With defer_writes the engine's selector writes the outbox, so a client
    # that reads slowly holds memory, never a thread. Without (the fiber
    # engines), the fiber waits for the client at the end of the response
    # (#finish_output), once the whole body is handed over. Either way every
    # byte the client has not taken is in an outbox, counted in the process's
    # Engine::OutputBudget, which holds back new app calls while it is spent.
    def write(data, held = false)
      @response_started = true
      return write_behind_outbox(data, held) if @outbox

      written = @io.write_nonblock(data, exception: false)
      return if written == data.bytesize

      rest = written == :wait_writable ? data : data.byteslice(written, data.bytesize - written)
      held || rest.bytesize <= OUTBOX_LIMIT ? hold(rest, held) : write_all(rest)
    end

    # True while part of a response waits in the outbox.
    def pending_output? = !@outbox.nil?

    # Writes what the outbox holds without waiting: :done, :wait, or :eof when
    # the client is gone.
    def flush_nonblock
      flush_step
    rescue *WRITE_FAILURES
      :eof
    end

    # Empties the outbox, waiting at most write_timeout at a time for the
    # client: before the socket itself goes to code that writes to it.
    def flush
      wait_for_reader while flush_step == :wait
    end

    # The response ended with :close (the handler says so): once the outbox is
    # written, the connection closes instead of reading a next request.
    def close_after_flush!
      @close_after_flush = true
      finish_output unless @defer_writes
    end

    def close_after_flush? = @close_after_flush

    # True once any byte of the current response has been written.
    def response_started? = @response_started

    # The env of the request being served (the parser's, until the next request).
    def current_env = @parser.env

    def write_all(data)
      loop do
        written = @io.write_nonblock(data, exception: false)
        if written == :wait_writable
          wait_for_reader
        elsif written == data.bytesize
          return
        else
          data = data.byteslice(written, data.bytesize - written)
        end
      end
    end

    # rack.hijack: the app takes the socket; the server forgets it.
    def call
      flush if @outbox
      @hijacked = true
      @io
    end

    def hijacked? = @hijacked

    def close
      @input.discard
      release_buffers
      drop_outbox
      @io.close unless @hijacked || @io.closed?
    rescue IOError, SystemCallError
      nil
    end

    private

    # Frees the read buffers now rather than at the next GC sweep. A closed
    # connection's 16 KiB would otherwise count towards Ruby's malloc
    # increase until then: with a new connection per request that brings
    # GCs on sooner, and majors by "oldmalloc", which in a reforked worker
    # copy the mark stack it shares with the mold (docs/REFORKING.md).
    def release_buffers
      @buffer.clear
      @scratch&.clear
      @offset = 0
    end

    WRITE_FAILURES = [Errno::EPIPE, Errno::ECONNRESET, Errno::ENOTCONN, Errno::ETIMEDOUT, IOError].freeze

    def wait_for_reader
      raise WriteTimeout, "client read nothing for #{@write_timeout}s" unless @io.wait_writable(@write_timeout)
    end

    def write_behind_outbox(data, held)
      return hold(data, held) if held || @outbox_own + data.bytesize <= OUTBOX_LIMIT

      flush
      write_all(data)
    end

    # Without defer_writes, the end of a response: the writer waits here for
    # the client to take what its outbox holds. A client that is gone or reads
    # nothing for write_timeout is closed (the rest cannot be sent), and so is
    # one whose writer is stopped mid-wait, so no budget is left held.
    def finish_output
      flush_before_next if @outbox
    end

    def flush_before_next
      done = false
      flush
      done = true
    rescue WriteTimeout, *WRITE_FAILURES
      nil
    ensure
      close unless done
    end

    # A copy that shares the bytes: the app may reuse its buffer after this.
    def hold(data, held)
      (@outbox ||= []) << (data.frozen? ? data : data.dup)
      @outbox_own += data.bytesize unless held
      @outbox_bytes += data.bytesize
      budget.take(data.bytesize)
      nil
    end

    def budget = @budget ||= Engine::OutputBudget.for(@config)

    def flush_step
      sent = 0
      while (data = @outbox&.first)
        written = @io.write_nonblock(data, exception: false)
        return :wait if written == :wait_writable

        sent += written
        written == data.bytesize ? @outbox.shift : @outbox[0] = data.byteslice(written, data.bytesize - written)
      end
      @outbox = nil
      @outbox_own = 0
      :done
    ensure
      release(sent) if sent.positive?
    end

    # The client took bytes from the outbox: they no longer count.
    def release(bytes)
      @outbox_bytes -= bytes
      budget.give(bytes)
    end

    # What the outbox still holds will never be sent (the connection closes).
    def drop_outbox
      release(@outbox_bytes) if @outbox_bytes.positive?
      @outbox = nil
      @outbox_own = 0
    end

    # RFC 9110 §10.1.1: answer 100 only while the body is still to come.
    def send_continue
      @continue_sent = true
      return unless @parser.expect_continue? && !@parser.done? && @offset >= @buffer.bytesize

      write_all(CONTINUE)
    end
  end
end
