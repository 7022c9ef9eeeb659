# frozen_string_literal: true

require_relative "../process/server"
require_relative "../ops/process_stats"
require_relative "message"
require_relative "heartbeat"
require_relative "mold"

module Spindle
  module Cluster
    # A worker process: runs one Server on the listeners it inherited, checks in
    # with the master every heartbeat, and obeys it. Its signals are a single
    # process's mechanism with the worker's table (Signals::WORKER): TERM/INT
    # drain within shutdown_timeout, QUIT drains with no limit. The master
    # orders its stops over the channel (Message::Stop), never by a signal, so
    # a stop signal the worker also had from the kernel is not taken as a
    # second one. When told to become the mold, it drains and then turns into
    # one instead of exiting, unless a stop came meanwhile (the Server's
    # phase decides which came first: Phase#once_drained).
    class Worker
      def initialize(index:, generation:, channel:, app:, config:, log:, listeners:, siblings:)
        @index = index
        @siblings = siblings
        @generation = generation
        @channel = channel
        @app = app
        @config = config
        @log = log
        @listeners = listeners
        @mold_generation = nil
      end

      # Runs in the forked child; never returns.
      def run
        Process.setproctitle("spindle worker #{@index} (generation #{@generation})")
        @log.become("worker #{@index}")
        Message.send_to(@channel, Message::Forked.new(pid: Process.pid))
        @listeners.each { |listener| listener.tls&.refresh(@log) } # certificates changed since the fork
        @server = Server.new(@app, @config, @log, listeners: @listeners, multiprocess: true, slot: @index,
                                                  siblings: @siblings).prepare
        # The master times the drain delay (Message::LeavePool): a worker's
        # own stop signal drains at once.
        @signals = @server.install_signals(Signals::WORKER, drain_delay: 0).on_dump { dump_threads }
        @config.run_hooks(@generation.zero? ? :after_worker_fork : :after_refork, @index)
        Message.send_to(@channel, Message::Booted.new(pid: Process.pid, index: @index, generation: @generation))
        heartbeat = Heartbeat.new(@channel, log: @log, checkin: -> { checkin }, obey: ->(order) { obey(order) },
                                            gone: -> { exit!(1) }).start
        @server.serve
        heartbeat.stop # after the order it is obeying, if any: a stop read is never lost
        become_mold if @mold_generation && !@server.phase.ending?
        exit!(0)
      rescue StandardError, ScriptError => e
        @log.exception(e, "worker #{@index} failed")
        exit!(1)
      end

      private

      # URG, from a master about to kill this worker (or the mold it is
      # becoming): the dump, then word that the master need not wait longer.
      def dump_threads
        @server.dump_threads
        Message.send_to(@channel, Message::Dumped.new(pid: Process.pid))
      end

      def checkin
        tracker = @server.handler.tracker
        Message::Checkin.new(pid: Process.pid, requests: tracker.served, in_flight: tracker.in_flight,
                             oldest_request_age: tracker.oldest_age, backlog: @server.backlog,
                             gc: ProcessStats.gc, durations: tracker.durations,
                             queue_times: tracker.queue_times, shed: tracker.shed,
                             log_lines_dropped: @log.dropped_lines)
      end

      def obey(message)
        case message
        when nil then exit!(1) # the master closed our channel: it died
        when Message::BecomeMold
          # No limit of its own: the master holds a mold-to-be to
          # --worker-timeout (Reforker), as it does every worker.
          @mold_generation = message.generation
          @server.drain(nil)
        when Message::LeavePool then @server.leave_pool
        when Message::Stop then @signals.order(message.how)
        when Message::RunGC then GC.start
        end
      end

      # A stop from here on ends the mold-to-be at once, as the mold's own
      # traps do: rebound before the phase decides, and a TERM whose stop the
      # signal thread began before that ends it too (Server#stop_gracefully),
      # so none can start a second drain in the mold (which waited out the
      # shutdown timeout while a stopping master waited for it).
      #
      # The last check-in says it has drained (nothing in flight): from here
      # the master gives its before_refork hook and warm-up --worker-timeout.
      def become_mold
        @signals.on_stop { exit!(0) }.on_force { exit!(0) }
        return unless @server.become_mold

        Message.send_to(@channel, checkin)
        Mold.new(generation: @mold_generation, channel: @channel, app: @app, config: @config,
                 log: @log, listeners: @listeners, siblings: @siblings).run
      end
    end
  end
end
