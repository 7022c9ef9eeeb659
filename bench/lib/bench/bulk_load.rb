# frozen_string_literal: true

require "etc"
require "socket"
require "io/wait"
require_relative "cpu_sampler"
require_relative "bottleneck"
require_relative "http_load"
require_relative "wrk"
require_relative "child"

module Bench
  # A closed-loop client for large bodies (static_1m, static_100m). wrk reads
  # 8 KB per read(2); on these 2 shared cores it took no more than ~1.2 GB/s
  # from nginx itself, so every server measured the same: wrk's ceiling.
  # This client reads each body into one reused 4 MB buffer per connection,
  # a few hundred read(2)s per 100 MB instead of 12,800, and took 2-2.6 GB/s
  # from the same nginx (bench/README.md, "Large files").
  #
  # Each of `connections` threads holds one keep-alive connection (a new one
  # when the server closes it after a response, as Unicorn does): it sends
  # GET path, reads the head, then exactly Content-Length bytes. A response
  # with no Content-Length, a status >= 400 or a broken connection is
  # counted, never silently taken as a full body. Bounded: no request starts
  # after `seconds`; every read waits at most `read_timeout`; the threads are
  # joined with a deadline and killed past it.
  class BulkLoad
    BUFFER = 4 << 20
    HEAD_MAX = 64 * 1024
    Broken = Class.new(StandardError)
    TimedOut = Class.new(Broken)

    def initialize(port:, path:, connections:, seconds:, server_pid:, read_timeout: 30)
      @port = port
      @request = "GET #{path} HTTP/1.1\r\nHost: 127.0.0.1:#{port}\r\n\r\n"
      @connections = connections
      @seconds = seconds
      @read_timeout = read_timeout
      @server_pid = server_pid
      @lock = Mutex.new
      @stats = { latencies: [], bad: 0, errors: Hash.new(0) }
    end

    # -> HttpLoad::Result (sessions: one per connection).
    def run
      sampler = CpuSampler.new(wrk_pid: Process.pid, server_pid: @server_pid)
      start = Child.now
      stop_at = start + @seconds
      sampling = Thread.new { loop { sampler.sample; sleep Wrk::SAMPLE_EVERY } }
      workers = Array.new(@connections) { Thread.new { connection(stop_at) } }
      HttpLoad.join(workers, stop_at + @read_timeout * 2)
      seconds = Child.now - start
      sampling.kill
      sampler.sample
      HttpLoad::Result.new(requests: @stats[:latencies].size, seconds: seconds, latencies: @stats[:latencies],
                           bad_status: @stats[:bad], errors: @stats[:errors], sessions_done: @connections,
                           sessions_total: @connections, capped: false, usage: sampler.usage)
    end

    # HttpLoad's record, with the load-generator verdict wrk runs get. The
    # client may use every core: its time is the kernel's copy of each body
    # into the buffer, done outside the GVL. (Two client processes of 8
    # connections each took no more from nginx than one of 16: 20-25 req/s
    # of 100 MB on this machine, the loopback copy's rate, the same for
    # every server measured.)
    def self.record(result, connections:, processes:, client:)
      verdict = Bottleneck.judge(result.usage, wrk_threads: Etc.nprocessors, processes: processes)
      HttpLoad.record(result, connections: connections, client: client)
              .merge(verdict: verdict.to_h, load_generator_bound: verdict.bound)
    end

    private

    def connection(stop_at)
      buffer = String.new(capacity: BUFFER)
      keep_alive(buffer, stop_at) while Child.now < stop_at
    rescue Errno::ECONNREFUSED, Errno::ETIMEDOUT
      count(:connect)
    rescue TimedOut
      count(:timeout)
    rescue Broken, IOError, SystemCallError
      count(:read)
    end

    # One connection, until time is up or the server closes it after a
    # response it said was the last (Unicorn closes after every one).
    def keep_alive(buffer, stop_at)
      socket = Socket.tcp("127.0.0.1", @port, connect_timeout: 10)
      loop do
        t0 = Child.now
        status, last = exchange(socket, buffer)
        tally(status, Child.now - t0)
        break if last || Child.now >= stop_at
      end
    ensure
      socket&.close
    end

    # One request and its whole response; -> [status, whether the server
    # closes the connection after it].
    def exchange(socket, buffer)
      socket.write(@request)
      head, body = read_head(socket, buffer)
      line = head.match(%r{\AHTTP/1\.([01]) (\d{3})}) or raise Broken, "no status line"
      length = head[/^content-length:[ \t]*(\d+)\r$/i, 1] or raise Broken, "no Content-Length"
      drain(socket, buffer, Integer(length, 10) - body)
      [line[2].to_i, last?(head, line[1])]
    end

    def last?(head, version)
      connection = head[/^connection:[ \t]*([^\r]*)\r$/i, 1].to_s.downcase
      connection.include?("close") || (version == "0" && !connection.include?("keep-alive"))
    end

    # -> [head, body bytes already read past it].
    def read_head(socket, buffer)
      head = String.new(capacity: HEAD_MAX) # binary: byte offsets below
      until (ends = head.index("\r\n\r\n"))
        raise Broken, "head over #{HEAD_MAX} bytes" if head.bytesize > HEAD_MAX

        head << read(socket, buffer, HEAD_MAX)
      end
      [head[0, ends + 2], head.bytesize - ends - 4]
    end

    def drain(socket, buffer, left)
      raise Broken, "more body than Content-Length" if left.negative?

      left -= read(socket, buffer, [left, BUFFER].min).bytesize while left.positive?
    end

    def read(socket, buffer, max)
      loop do
        case (got = socket.read_nonblock(max, buffer, exception: false))
        when :wait_readable then socket.wait_readable(@read_timeout) or raise TimedOut
        when nil then raise Broken, "closed mid-response"
        else return got
        end
      end
    end

    def tally(status, elapsed)
      @lock.synchronize do
        @stats[:latencies] << elapsed
        @stats[:bad] += 1 if status >= 400
      end
    end

    def count(kind) = @lock.synchronize { @stats[:errors][kind] += 1 }
  end
end
