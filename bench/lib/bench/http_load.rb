# frozen_string_literal: true

require "net/http"
require_relative "cpu_sampler"
require_relative "wrk"
require_relative "stats"
require_relative "child"

module Bench
  # A closed-loop HTTP client inside the bench process, for scenarios whose
  # figure is not wrk's steady-state throughput: a fixed amount of work
  # (sessions), some of it concurrent, timed from the first request to the
  # last response, so nothing in flight at the end is lost.
  #
  # A session is a list of paths sent one after another over one new
  # keep-alive connection to 127.0.0.1 (closed at the session's end).
  # `concurrency` threads take sessions from a shared queue. Bounded: no new
  # session starts after `time_cap` seconds; every request has a read timeout;
  # the threads are joined with a deadline and killed past it.
  class HttpLoad
    Result = Struct.new(:requests, :seconds, :latencies, :bad_status, :errors, :sessions_done,
                        :sessions_total, :capped, :usage, keyword_init: true) do
      def requests_per_sec = seconds.positive? ? requests / seconds : 0.0
    end

    def initialize(port:, concurrency:, time_cap:, read_timeout: 60, server_pid: nil)
      @port = port
      @concurrency = concurrency
      @time_cap = time_cap
      @read_timeout = read_timeout
      @server_pid = server_pid
    end

    def run(sessions)
      queue = Queue.new
      sessions.each { |s| queue << s }
      queue.close
      lock = Mutex.new
      stats = { latencies: [], bad: 0, errors: Hash.new(0), done: 0 }
      sampler = @server_pid && CpuSampler.new(wrk_pid: Process.pid, server_pid: @server_pid)
      start = Child.now
      stop_at = start + @time_cap
      sampling = sampler && Thread.new { loop { sampler.sample; sleep Wrk::SAMPLE_EVERY } }
      workers = Array.new([@concurrency, sessions.size].min) do
        Thread.new do
          while Child.now < stop_at && (session = queue.pop)
            run_session(session, lock, stats)
          end
        end
      end
      self.class.join(workers, stop_at + @read_timeout * 2)
      seconds = Child.now - start
      sampling&.kill
      sampler&.sample
      Result.new(requests: stats[:latencies].size, seconds: seconds, latencies: stats[:latencies],
                 bad_status: stats[:bad], errors: stats[:errors], sessions_done: stats[:done],
                 sessions_total: sessions.size, capped: stats[:done] < sessions.size, usage: sampler&.usage)
    end

    # The record Bench::Summary reads, like WrkTrial's.
    def self.record(result, connections:, client:)
      lat = result.latencies.sort
      pick = ->(q) { lat.empty? ? 0.0 : (lat[[(q * lat.size).ceil - 1, 0].max] * 1000).round(3) }
      mean = lat.empty? ? 0.0 : (lat.sum / lat.size * 1000).round(3)
      {
        connections: connections, requests_per_sec: result.requests_per_sec.round(2), requests: result.requests,
        seconds: result.seconds.round(3),
        latency_ms: { p50: pick.call(0.5), p90: pick.call(0.9), p99: pick.call(0.99), p999: pick.call(0.999),
                      max: pick.call(1.0), mean: mean },
        errors: { connect: result.errors[:connect], read: result.errors[:read], write: 0,
                  timeout: result.errors[:timeout] },
        bad_status: result.bad_status, sessions_done: result.sessions_done,
        sessions_total: result.sessions_total, capped: result.capped,
        cpu: result.usage&.to_h, verdict: { bound: false }, load_generator_bound: false, wrk: client
      }
    end

    # Joins the threads by the deadline; kills those still running past it.
    def self.join(threads, deadline)
      threads.each do |t|
        left = deadline - Child.now
        t.kill unless left.positive? && t.join(left)
      end
    end

    private

    def run_session(paths, lock, stats)
      http = Net::HTTP.new("127.0.0.1", @port)
      http.open_timeout = 10
      http.read_timeout = @read_timeout
      http.start do
        paths.each do |path|
          t0 = Child.now
          response = http.request(Net::HTTP::Get.new(path))
          elapsed = Child.now - t0
          lock.synchronize do
            stats[:latencies] << elapsed
            stats[:bad] += 1 if response.code.to_i >= 400
          end
        end
      end
      lock.synchronize { stats[:done] += 1 }
    rescue Net::OpenTimeout, Errno::ECONNREFUSED
      lock.synchronize { stats[:errors][:connect] += 1 }
    rescue Net::ReadTimeout
      lock.synchronize { stats[:errors][:timeout] += 1 }
    rescue IOError, SystemCallError, EOFError, Net::HTTPBadResponse
      lock.synchronize { stats[:errors][:read] += 1 }
    end

  end
end
