# frozen_string_literal: true

require_relative "../server"
require_relative "../process_stats"
require_relative "message"
require_relative "mold"

module Spindle
  module Cluster
    # A worker process: runs one Server on the listeners it inherited, checks in
    # with the master every heartbeat, and obeys it. TERM/INT drain within
    # shutdown_timeout; QUIT drains with no limit. When told to become the mold,
    # it drains and then turns into one instead of exiting.
    class Worker
      HEARTBEAT = 1.0

      def initialize(index:, generation:, channel:, app:, config:, log:, listeners:)
        @index = index
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
        @server = Server.new(@app, @config, @log, listeners: @listeners, multiprocess: true).prepare
        trap_signals
        @config.run_hooks(@generation.zero? ? :after_worker_fork : :after_refork, @index)
        Message.send_to(@channel, Message::Booted.new(pid: Process.pid, index: @index, generation: @generation))
        heartbeat = Thread.new { heartbeat_loop }
        @server.serve
        heartbeat.kill
        become_mold if @mold_generation
        exit!(0)
      rescue StandardError, ScriptError => e
        @log.exception(e, "worker #{@index} failed")
        exit!(1)
      end

      private

      def trap_signals
        Signal.trap("TERM") { stop_signal(@config.shutdown_timeout) }
        Signal.trap("INT") { stop_signal(@config.shutdown_timeout) }
        Signal.trap("QUIT") { stop_signal(nil) }
        %w[USR1 USR2 TTIN TTOU].each { |name| Signal.trap(name, "IGNORE") }
      end

      # First signal: drain (on a thread: a trap handler must not take locks).
      # A second: stop at once.
      def stop_signal(timeout)
        exit!(1) if @draining
        @draining = true
        Thread.new { @server.drain(timeout) }
      end

      def heartbeat_loop
        loop do
          Message.send_to(@channel, checkin) || exit!(1) # the master is gone
          obey(Message.receive_nonblock(@channel)) if @channel.wait_readable(HEARTBEAT)
        end
      rescue StandardError => e
        @log.exception(e, "worker #{@index} heartbeat failed")
      end

      def checkin
        tracker = @server.handler.tracker
        Message::Checkin.new(pid: Process.pid, requests: tracker.served, in_flight: tracker.in_flight,
                             oldest_request_age: tracker.oldest_age, backlog: @server.backlog,
                             gc: ProcessStats.gc)
      end

      def obey(message)
        case message
        when nil then exit!(1) # the master closed our channel: it died
        when Message::BecomeMold
          @mold_generation = message.generation
          @server.drain(nil)
        when Message::RunGC then GC.start
        end
      end

      def become_mold
        Mold.new(generation: @mold_generation, channel: @channel, app: @app, config: @config,
                 log: @log, listeners: @listeners).run
      end
    end
  end
end
