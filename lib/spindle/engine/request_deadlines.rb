# frozen_string_literal: true

require_relative "../request/deadline"
require_relative "../request/request_name"

module Spindle
  module Engine
    # --request-timeout's watch: among the connections given, the requests
    # whose Deadline (env["spindle.deadline"]) passed while the app runs.
    # Each is marked once (Deadline#pass!) and logged with its method and
    # path; what else happens is the engine's (docs/DEADLINES.md):
    #
    # - fibers, hybrid (cancel: true): RequestTimeout is raised into the
    #   request's fiber, which is at a wait (the watch runs on the same loop,
    #   so the fiber is not running): the app's ensure blocks run, and
    #   RequestPath::RequestDeadline answers 503. The loop's DeadlineSweeper
    #   calls #check on its ticks.
    # - blocking, threads: nothing is raised into the app. Thread#raise (as
    #   rack-timeout does) lands at any line, inside an ensure, a lock or a
    #   library's half-done state, and leaves them broken for the requests
    #   after. The request runs on; once it returns, RequestDeadline answers
    #   503 in place of its response. #watch runs a thread that checks.
    #
    # Nothing of this is built without --request-timeout: a request costs
    # nothing more then.
    class RequestDeadlines
      INTERVAL = 0.25 # the thread's; the sweeper's is its own (DeadlineSweeper::INTERVAL), the same

      def initialize(log, cancel:)
        @log = log
        @cancel = cancel
      end

      # connections: Connections whose requests may be in flight (a loop's,
      # a tracker's). The due ones are found first, then acted on: raising
      # into a fiber runs it, and it may leave the loop's table meanwhile.
      def check(connections, now = Deadline.now)
        connections.filter_map { |conn| due(conn, now) }.each { |env, deadline| pass(env, deadline) }
      end

      # blocking, threads: a thread that checks the requests in flight
      # (tracker: the Handler's RequestTracker) every INTERVAL until #stop.
      def watch(tracker)
        @thread = Thread.new do
          loop do
            sleep INTERVAL
            check(tracker.in_flight_connections)
          end
        end
        @thread.name = "spindle deadlines"
        self
      end

      def stop
        @thread&.kill&.join
      end

      private

      def due(conn, now)
        env = conn.current_env or return
        deadline = env[Deadline::ENV_KEY]
        [env, deadline] if deadline&.due?(now)
      end

      def pass(env, deadline)
        return unless deadline.pass! # the call ended meanwhile (another thread)

        @cancel ? cancel(env, deadline) : flag(env, deadline)
      rescue StandardError => e # the watch must outlive one request's trouble
        @log.exception(e, "request deadline check failed")
      end

      def flag(env, deadline)
        @log.warn("request timeout: #{name(env, deadline)}; it runs on (nothing is raised into it), " \
                  "and what it returns will be answered 503")
      end

      # The fiber is suspended at a wait, or ready to run (it yielded):
      # either way the scheduler can raise into it. FiberError: it cannot
      # (a fiber resumed, not transferred to); the request still gets its
      # 503 when it returns.
      def cancel(env, deadline)
        @log.warn("request timeout: #{name(env, deadline)}; raising Spindle::RequestTimeout at its wait")
        deadline.raised!
        Fiber.scheduler.raise(deadline.fiber, RequestTimeout, "request passed its #{deadline.seconds}s deadline")
      rescue FiberError
        deadline.raised!(false)
      end

      def name(env, deadline)
        ran = Deadline.now - deadline.started_at
        "#{RequestName.for_log(env)} passed its deadline (#{format('%.2f', ran)}s since its start)"
      end
    end
  end
end
