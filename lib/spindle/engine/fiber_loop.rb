# frozen_string_literal: true

# async 2.24.0 crashes on Ruby 3.1: refuse it with the Gemfile pin to add
# (AsyncGuard) rather than fail inside async at the first wait.
require_relative "async_guard"
Spindle::Engine::AsyncGuard.activate!
require "async"
Spindle::Engine::AsyncGuard.check!
require "async/barrier" # not used here: ENGINES.md promises apps Async::Barrier
require "async/condition"
require_relative "request_reader"
require_relative "stall_detector"
require_relative "deadline_sweeper"
require_relative "fiber_admission"
require_relative "connection_policy"
require_relative "outbox"
require_relative "output_budget"
require_relative "deadlines"
require_relative "inbox"
require_relative "lingering_close"
require_relative "connections"
require_relative "request_deadlines"
require_relative "app_gate"
require_relative "wait_order"
require_relative "../process/phase"

module Spindle
  module Engine
    # One event loop on one thread: an Async reactor (a Fiber::Scheduler backed
    # by io-event's epoll selector) with a fiber per connection. The app runs in
    # its connection's fiber, so its sleep, socket, DNS and database waits yield
    # to other connections instead of holding the thread. Apps may start their
    # own concurrent work (Async { }, Async::Barrier) inside a request.
    #
    # It never holds more than max_connections: at the cap, a new client takes
    # the place of the keep-alive connections idle the longest, and while none
    # is idle, or while slow readers hold the output budget, it stops
    # accepting and the rest wait in the kernel's backlog (FiberAdmission,
    # ConnectionPolicy).
    #
    # Connection tasks are children of the loop's root task, never of the
    # acceptor that accepted them: a drain stops the acceptors, and Async stops
    # a task's children with it, which raised Async::Stop inside the app of
    # every request in flight (a 500 and an "app raised" line instead of the
    # response). No Async::Barrier either: it keeps every task it ever started
    # until someone waits on it, so a long-lived loop kept every finished
    # connection's task, and its memory grew with every connection served
    # (PERFORMANCE.md, "The figures behind lib/'s comments"). The drain
    # waits on @tasks instead, which holds
    # exactly the live ones.
    #
    # Each loop has its own Connections (hybrid's too: its connections are
    # touched on its own thread alone), which counts every connection the
    # loop has open and closes each with its reason; @tasks holds the fiber
    # serving each.
    class FiberLoop
      # share: hybrid's LoopShare, for the loops of one process on the same
      # listeners; nil for a loop alone. siblings: a cluster worker's
      # SiblingShare (nil: none). phase: the process's Phase: the loop drains
      # once it is draining (#wake, on its change). budget: the process's
      # OutputBudget (hybrid's loops share it).
      def initialize(listeners:, handler:, config:, log:, share: nil, siblings: nil, phase: Phase.new,
                     budget: OutputBudget.for(config, log))
        @listeners = listeners
        @budget = budget
        @phase = phase
        @handler = handler
        @config = config
        @log = log
        @policy = ConnectionPolicy.new(config)
        @deadlines = @policy.deadlines
        @connections = Connections.new
        @reader = RequestReader.new(handler, config, @deadlines, @connections, budget: budget)
        @tasks = {}.compare_by_identity # Connection => its Async::Task
        @share = share
        @inbox = Inbox.new if share # clients the other loops accepted for this one
        @seat = share&.join(@tasks, inbox: @inbox, held: method(:held?)) # hybrid: this loop's LoopShare::Seat
        @served_at = 0.0 # when this loop last finished a request (hybrid)
        @detector = nil
        @siblings = siblings
        # hybrid's loops split the burst, and take turns (LoopShare).
        @accept_burst = @policy.accept_burst(loops: share&.loops || 1)
        @starting = 0 # accepted, their fibers queued (#start)
        @gate = gate(config) # --app-concurrency: requests wait there for the app
        @wake_r, @wake_w = IO.pipe
      end

      def run
        @share&.running(@tasks)
        Sync do |task|
          @connection_ended = Async::Condition.new
          @root = task
          @detector = StallDetector.new(@log, @config.stall_threshold).start(task)
          sweeper = DeadlineSweeper.new(@tasks, @deadlines, @handler.writer, method(:retire_apart),
                                        connections: @connections, phase: @phase,
                                        requests: request_deadlines).start(task)
          acceptors = @listeners.map { |listener| task.async { accept_loop(listener) } }
          acceptors << task.async { @inbox.each { |socket, listener| start(socket, listener) } } if @inbox
          wait_for_drain
          drain(acceptors)
          sweeper.stop
          @detector.stop
        end
      end

      # From any thread: the Phase moved (to draining), and the loop waits
      # on this pipe for it.
      def wake
        @wake_w.write_nonblock(".", exception: false)
      end

      # hybrid: the clients placed on this loop and not gone (LoopShare::Seat#placed).
      def placed = @seat.placed

      # Requests waiting at the AppGate (--app-concurrency), from any thread;
      # without one, a request runs in its connection's fiber at once.
      def backlog = @gate ? @gate.waiting : 0

      # Connections this loop has open now (Connections#count), from any
      # thread.
      def open_connections = @connections.count

      # Whether this loop's scheduler has missed two of its StallDetector's
      # heartbeats (a quarter of --stall-threshold apart) and finished no
      # request meanwhile: code that does not yield holds it. Also before
      # it runs.
      def held?
        return true unless @detector

        last = [@served_at, @detector.last_beat].max
        Process.clock_gettime(Process::CLOCK_MONOTONIC) - last > 2 * @detector.interval
      end

      private

      def accept_loop(listener)
        admission = FiberAdmission.new(@tasks, @handler, connections: @connections, policy: @policy, budget: @budget,
                                                         share: @share, siblings: @siblings)
        loop do
          listener.io.wait_readable
          @accept_burst.times do
            victims = admission.wait { @starting }
            socket = accept(listener) or break
            admission.admitted(victims)
            place(socket, listener)
          end
        end
      rescue Listener::Closed
        nil # it stopped listening (a drain, or the master's stop): this acceptor is done
      end

      # hybrid: a client goes to the loop that holds the fewest (LoopShare#place),
      # so each loop's clients are as many as the others'. The loops get
      # about equal turns with the GVL however many clients each holds, so
      # the clients of a loop holding more were served less often
      # (PERFORMANCE.md, "The figures behind lib/'s comments").
      # The loop that accepts is whichever holds the GVL when clients
      # arrive, so the split was left to chance at every burst.
      def place(socket, listener)
        return start(socket, listener) unless @seat

        target = @share.place(@seat)
        return start(socket, listener) if target.equal?(@seat)
        return if target.inbox.hand(socket, listener)

        @share.move(target, @seat) # its inbox is closed (it drains): this loop keeps the client
        start(socket, listener)
      end

      # Queues the connection's fiber to start at the loop's next turn, and
      # the acceptor goes on at once. Started from the acceptor (Task#async
      # runs the new fiber first), each start sent the acceptor to the back
      # of the loop's ready queue until the next turn: a busy loop accepted
      # one client per turn, and when many clients reconnected together the
      # last waited long in the backlog (PERFORMANCE.md,
      # "The figures behind lib/'s comments"). Queued connections count towards the
      # cap (@starting) until their fibers start.
      def start(socket, listener)
        @starting += 1
        publish_held
        Fiber.scheduler.push(Fiber.new { start_now(socket, listener) })
      end

      # In the queued fiber, which ends once the connection's own has started.
      # An error here would reach the loop itself: it is logged instead.
      def start_now(socket, listener)
        @starting -= 1
        @root.async { |task| serve(socket, listener, task) }
      rescue StandardError => e
        @log.exception(e, "connection not started")
        @connections.discard(socket, :failed)
        @share&.release(@seat)
        @connection_ended.signal # a drain may be waiting for it
      end

      # Out of file descriptors: pause accepting for a moment (the sleep yields);
      # the connections we have keep being served, and their closing frees fds.
      def accept(listener)
        listener.accept_nonblock
      rescue Listener::Exhausted => e
        @log.error("cannot accept (#{e.message}); pausing accepts for #{ConnectionPolicy::BACK_OFF}s")
        sleep ConnectionPolicy::BACK_OFF
        nil
      end

      def serve(socket, listener, task)
        conn = @connections.add(@handler.open_connection(socket, listener, Outbox.new(socket, @config, @budget)))
        @tasks[conn] = task
        serve_requests(conn)
      rescue StandardError => e
        @log.exception(e, "connection failed")
        @connections.close(conn, :failed) if conn
      ensure
        @tasks.delete(conn)
        @share&.release(@seat)
        publish_held
        @connection_ended.signal
      end

      # The connections this process holds, for its siblings (SiblingShare):
      # under hybrid, every loop's.
      def publish_held
        @siblings.held = @share ? @share.held : @tasks.size + @starting if @siblings
      end

      def serve_requests(conn)
        state = @reader.read(conn)
        turns = 0
        while state == :complete
          outcome = @gate ? @gate.pass(conn) { @handler.serve(conn) } : @handler.serve(conn)
          @served_at = Process.clock_gettime(Process::CLOCK_MONOTONIC) if @inbox
          return @connections.release(conn) if outcome == :hijacked
          return retire(conn, :done) unless outcome == :keep_alive
          # This fiber writes what a slow reader has not taken yet (Outbox#finish).
          return @connections.close(conn, :write_failed) unless conn.outbox.finish

          turns = conn.buffered? ? turns + 1 : 0 # not buffered: read_next yields first
          if turns == ConnectionPolicy::TURNS # a pipelining client: the other fibers run
            Fiber.scheduler.yield
            turns = 0
          end
          state = @reader.read_next(conn)
        end
        retire(conn, :refused) if state == :refused
      end

      # In conn's own fiber, which serves no request any more
      # (Connections#retire, with this loop as the holder: #owe, #linger).
      # A stop at one of its waits (Async::Stop) closes conn too.
      def retire(conn, reason)
        @connections.retire(conn, reason, self)
      ensure
        @connections.close(conn, :stopped) # closed already (nothing then), but when a stop came mid-way
      end

      public

      # Connections#retire's holder, in conn's own fiber: its responses go
      # out (Outbox#finish) before it closes. False when the client is gone.
      def owe(conn) = conn.outbox.finish || @connections.close(conn, :write_failed)

      # Connections#retire's holder, in conn's own fiber: its close lingers
      # while the client may still be sending (LingeringClose), this fiber
      # waiting for the input to drop. The wait has its own deadline, not the
      # DeadlineSweeper's: a close that lingers must end even once the
      # sweeper has stopped.
      def linger(conn)
        nil while LingeringClose.wait(conn) && LingeringClose.drain(conn) == :linger
        @connections.close(conn, :done)
      end

      private

      # After a 408 (Timeouts.expire) from the DeadlineSweeper, which
      # stopped conn's fiber: a fiber of its own retires conn, in the loop's
      # table meanwhile, so that it counts towards the cap and a drain waits
      # for it (within the linger's bounds).
      def retire_apart(conn)
        @root.async do |task|
          @tasks[conn] = task
          retire(conn, :refused)
        ensure
          @tasks.delete(conn)
          @connection_ended.signal
        end
      end

      # --app-concurrency: this loop's AppGate, in WaitOrder's order when
      # --max-queue-time sheds. nil: every request goes straight in.
      def gate(config)
        return unless config.app_concurrency

        AppGate.new(config.app_concurrency, (WaitOrder.new(config.max_queue_time) if config.max_queue_time))
      end

      # --request-timeout: the requests past theirs are cancelled at their
      # waits (RequestDeadlines, on the sweeper's ticks).
      def request_deadlines
        RequestDeadlines.new(@log, cancel: true) if @config.request_timeout
      end

      # The root fiber's wait while the loop serves: until the Phase is
      # draining (#wake).
      def wait_for_drain
        until @phase.draining?
          @wake_r.wait_readable
          @wake_r.read_nonblock(64, exception: false)
        end
      end

      # Stop accepting, and let the requests in flight finish (the server
      # bounds how long); the sweeper closes connections idle between
      # requests, as the Phase is draining. A connection is in @tasks from its task's first step (no
      # wait comes before), and counted in @starting while queued before it
      # (#start), so none can be missed.
      #
      # hybrid: the clients another loop handed over and this one had not
      # started yet are served too, as every client accepted is. Closing
      # them failed a client that did nothing wrong: one that reconnected
      # just as its worker began to drain got no response (a phased restart
      # under load, test/cluster/fiber_drain_test.rb, once in a CI run).
      def drain(acceptors)
        acceptors.each(&:stop)
        @inbox&.close&.each { |socket, listener| start(socket, listener) }
        @connection_ended.wait until @tasks.empty? && @starting.zero?
      end
    end
  end
end
