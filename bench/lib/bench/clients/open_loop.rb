# frozen_string_literal: true

require "socket"

module Bench
  # An open-loop HTTP/1.1 client at a fixed request rate, for the overload
  # scenario: request n is due at start + n / rate whatever the server does,
  # and its latency counts from that slot, not from when a connection was
  # free to send it (so a server that falls behind is charged for the
  # backlog it causes: no coordinated omission). wrk's paced.lua holds a
  # rate too, but wrk's histogram mixes the 503s of a shedding server in
  # with the pages it served; here every response keeps its own status.
  #
  # One thread, non-blocking sockets, IO.select. Up to max_connections
  # keep-alive connections, opened as the schedule needs them; a due request
  # waits for a free one (its wait counts). A response that says
  # `connection: close` (Spindle's 503) closes its connection.
  #
  # Bounded: rate * seconds requests; a request not answered `timeout`
  # seconds after its slot is given up (a timeout, sent or not); nothing runs
  # past seconds + timeout.
  #
  # open_loop.c (OpenLoop::Native, open_loop_native.rb) is the same client
  # in C, at about half the CPU; bench/test/overload_test.rb holds both to
  # the same behaviour.
  class OpenLoop
    Result = Struct.new(:offered, :seconds, :wall, :last_ok, :statuses, :ok_latencies, :ok_from_send, :timeouts, :errors, :late_sends,
                        :connections_opened, :cpu_s, keyword_init: true)

    # A connection and the request in flight on it.
    Conn = Struct.new(:sock, :state, :slot, :sent, :buf)

    # stamp: each request carries `X-Request-Start: t=<when it was sent,
    # wall clock>`, as a proxy in front stamps the time a request reached
    # it, so a server that trusts it sees the wait in the kernel's queues as
    # well as its own (docs/QUEUE_TIME.md). The send, not the slot: a wait
    # in this client's own queue (all connections busy, or the client short
    # of CPU) is upstream of any proxy.
    # Each 2xx's latency is kept twice: from its slot (what a user sees,
    # the client's queue included) and from its send.
    def initialize(port:, path:, rate:, seconds:, max_connections:, timeout: 10, stamp: false)
      @addr = Socket.sockaddr_in(port, "127.0.0.1")
      @head = "GET #{path} HTTP/1.1\r\nHost: 127.0.0.1:#{port}\r\n".b
      @stamp = stamp
      @rate = rate.to_f
      @total = (rate * seconds).round
      @seconds = seconds
      @max = max_connections
      @timeout = timeout
    end

    def run
      @statuses = Hash.new(0)
      @ok = []
      @ok_sent = []
      @timeouts = @errors = @late = @opened = @next = 0
      @pending = [] # slots due, not yet sent (oldest first)
      @idle = []
      @connecting = {} # sock => Conn, connect not yet done
      @busy = {} # sock => Conn, in the order sent (so oldest slot first)
      @last_ok = nil
      cpu = Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID)
      @start = now
      @wall_start = Time.now.to_f
      loop_until(@start + @seconds + @timeout)
      give_up_all
      Result.new(offered: @total, seconds: @seconds, wall: now - @start, last_ok: @last_ok && @last_ok - @start,
                 statuses: @statuses, ok_latencies: @ok, ok_from_send: @ok_sent, timeouts: @timeouts, errors: @errors, late_sends: @late,
                 connections_opened: @opened, cpu_s: Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID) - cpu)
    end

    private

    def now = Process.clock_gettime(Process::CLOCK_MONOTONIC)

    def loop_until(deadline)
      while (t = now) < deadline
        @pending << slot_time(@next).tap { @next += 1 } while @next < @total && slot_time(@next) <= t
        expire(t)
        send_pending(t)
        break if @next >= @total && @pending.empty? && @busy.empty?

        wait(t)
      end
    end

    def slot_time(n) = @start + n / @rate

    # Requests past their deadline: a queued one is dropped, an in-flight one
    # closes its connection (the answer would come too late to count). Both
    # are in slot order, so only their heads are looked at.
    def expire(t)
      @timeouts += 1 while @pending.first && @pending.first + @timeout <= t && @pending.shift
      while (oldest = @busy.first&.last) && oldest.slot + @timeout <= t
        @timeouts += 1
        close(oldest)
      end
    end

    def send_pending(t)
      while (slot = @pending.first) && (conn = free_connection)
        @pending.shift
        @late += 1 if t - slot > 0.001
        conn.slot = slot
        conn.buf = +"".b
        @busy[conn.sock] = conn
        conn.state == :open ? write(conn) : @connecting[conn.sock] = conn
      end
    end

    def free_connection
      @idle.pop || (@busy.size < @max ? connect : nil)
    end

    def connect
      sock = Socket.new(:INET, :STREAM)
      sock.setsockopt(Socket::IPPROTO_TCP, Socket::TCP_NODELAY, 1)
      @opened += 1
      state = sock.connect_nonblock(@addr, exception: false) == :wait_writable ? :connecting : :open
      Conn.new(sock, state, nil, nil)
    end

    def write(conn)
      conn.state = :open
      @connecting.delete(conn.sock)
      conn.sent = now
      request = @stamp ? "#{@head}X-Request-Start: t=#{format('%.6f', @wall_start + conn.sent - @start)}\r\n\r\n" : "#{@head}\r\n"
      n = conn.sock.write_nonblock(request, exception: false)
      raise IOError, "short write" unless n == request.bytesize # a short request into an empty socket buffer
    rescue IOError, SystemCallError
      fail_request(conn)
    end

    def wait(t)
      next_slot = @next < @total ? slot_time(@next) : t + 0.05
      timeout = (next_slot - t).clamp(0, 0.05)
      writers = @connecting.keys
      ready_r, ready_w, = IO.select(@busy.keys - writers, writers, nil, timeout)
      ready_w&.each { |s| connected(@busy[s]) }
      ready_r&.each { |s| readable(@busy[s]) if @busy[s] }
    end

    def connected(conn)
      result = conn.sock.connect_nonblock(@addr, exception: false)
      return if result == :wait_writable

      write(conn)
    rescue Errno::EISCONN
      write(conn)
    rescue SystemCallError
      fail_request(conn)
    end

    def readable(conn)
      chunk = conn.sock.read_nonblock(65_536, exception: false)
      return if chunk == :wait_readable
      return complete(conn, eof: true) if chunk.nil?

      conn.buf << chunk
      complete(conn, eof: false)
    rescue SystemCallError, IOError
      fail_request(conn)
    end

    # Records the response once it is whole; keeps the connection for the
    # next request unless either side closes it.
    def complete(conn, eof:)
      head_end = conn.buf.index("\r\n\r\n") or return(eof ? fail_request(conn) : nil)
      head = conn.buf.byteslice(0, head_end).downcase
      status = head[/\Ahttp\/1\.[01] (\d{3})/, 1].to_i
      if status.between?(100, 199) # interim (103 Early Hints): skip it, read on
        conn.buf = conn.buf.byteslice(head_end + 4..)
        return complete(conn, eof: eof)
      end

      body_done = body_complete?(head, conn.buf, head_end + 4, eof)
      return(eof ? fail_request(conn) : nil) unless body_done

      record(status, conn)
      close_after = eof || head.match?(/^connection:\s*close/) || body_done == :at_eof
      close_after ? close(conn) : keep(conn)
    end

    # true once the body is in buf (content-length or chunked), :at_eof for
    # a body delimited by the close.
    def body_complete?(head, buf, from, eof)
      if (length = head[/^content-length:\s*(\d+)/, 1])
        buf.bytesize - from >= length.to_i
      elsif head.match?(/^transfer-encoding:.*chunked/)
        chunked_done?(buf, from)
      else
        eof && :at_eof
      end
    end

    # Walks the chunk sizes to the last (zero) chunk and its blank line.
    def chunked_done?(buf, at)
      loop do
        line_end = buf.index("\r\n", at) or return false
        size = buf.byteslice(at, line_end - at).to_i(16)
        return !buf.index("\r\n\r\n", line_end).nil? if size.zero? # trailers, if any, end with a blank line

        at = line_end + 2 + size + 2
        return false if at > buf.bytesize
      end
    end

    def record(status, conn)
      @statuses[status] += 1
      return unless status.between?(200, 299)

      @last_ok = now
      @ok << @last_ok - conn.slot
      @ok_sent << @last_ok - conn.sent
    end

    def fail_request(conn)
      @errors += 1
      close(conn)
    end

    def keep(conn)
      @busy.delete(conn.sock)
      @idle << conn
    end

    def close(conn)
      @busy.delete(conn.sock)
      @connecting.delete(conn.sock)
      conn.sock.close unless conn.sock.closed?
    end

    def give_up_all
      @timeouts += @pending.size + @busy.size + (@total - @next)
      @busy.each_value { |c| c.sock.close }
      @idle.each { |c| c.sock.close }
      @busy.clear
    end
  end
end
