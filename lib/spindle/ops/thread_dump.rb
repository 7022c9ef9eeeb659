# frozen_string_literal: true

require_relative "../log"
require_relative "../request/handler"

module Spindle
  # What a worker is doing, written to its log when asked (URG; the master
  # asks a worker it is about to kill for being stuck, docs/SIGNALS.md): the
  # requests in flight (method, path without the query, request id, how long
  # each has run) and every thread's backtrace. It runs on the signal watcher
  # thread (Signals), never in a trap handler: the trap only queues, so
  # taking the log's lock here cannot deadlock a thread that holds it.
  class ThreadDump
    FRAMES = 40 # per thread: where it is stuck is at the top

    # tracker: the RequestTracker of the process's Server (nil: none yet).
    def initialize(log, tracker)
      @log = log
      @tracker = tracker
    end

    # Best effort: whatever fails here must not take the watcher thread down.
    def write
      threads = Thread.list
      requests = @tracker ? @tracker.in_flight_ages.filter_map { |conn, age| request(conn, age) } : []
      @log.warn("thread dump: #{threads.size} thread(s), #{requests.size} request(s) in flight" \
                "#{": #{requests.join(', ')}" unless requests.empty?}")
      threads.each_with_index { |thread, i| @log.warn(thread_entry(thread, i + 1, threads.size)) }
    rescue StandardError => e
      @log.exception(e, "thread dump failed")
    end

    private

    # Never the query string: its values may be secrets (tokens, e-mail addresses).
    def request(conn, age)
      env = conn.current_env
      return unless env

      id = env["HTTP_X_REQUEST_ID"]
      "#{Handler.describe(env)} (request id #{id ? Log.escape(id) : '-'}, #{format('%.1f', age)}s)"
    end

    def thread_entry(thread, number, count)
      frames = thread.backtrace || []
      shown = frames.first(FRAMES).map { |frame| "\n    #{Log.escape(frame)}" }.join
      more = frames.size > FRAMES ? "\n    ... #{frames.size - FRAMES} more" : ""
      "thread #{number}/#{count} #{Log.escape(thread.name || 'unnamed')} (#{thread_role(thread)}" \
        "#{thread.status || 'dead'}):#{shown}#{more}"
    end

    def thread_role(thread)
      if thread == Thread.main then "main, "
      elsif thread == Thread.current then "this dump, "
      else ""
      end
    end
  end
end
