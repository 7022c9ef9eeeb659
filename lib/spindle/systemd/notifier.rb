# frozen_string_literal: true

require "socket"

module Spindle
  module Systemd
    # sd_notify(3) without libsystemd: one datagram of NAME=VALUE lines to the
    # UNIX socket systemd names in $NOTIFY_SOCKET (a path, or "@name" in the
    # abstract namespace). Under a Type=notify unit this is how systemd learns
    # that Spindle serves (READY=1), reloads (RELOADING=1), stops (STOPPING=1),
    # what it is doing (STATUS=), that the master's pid changed after a hot
    # restart (MAINPID=) and that the master still runs (WATCHDOG=1).
    #
    # NOTIFY_SOCKET stays in the environment: a new master started by USR2
    # must be able to tell systemd that it took over. Only the master (or a
    # single process) sends; workers are never given a Notifier.
    #
    # Sending never raises: systemd gone away (ECONNREFUSED) or a socket that
    # vanished must not stop a server that is serving. The first failure is
    # logged, once.
    class Notifier
      # What no systemd asked for: every call is a no-op.
      class Off
        def enabled? = false
        def notify(**) = nil
        def ready(**) = nil
        def reloading(**) = nil
        def stopping(**) = nil
        def status(_text) = nil
        def watchdog = nil
      end

      OFF = Off.new.freeze

      # The notifier $NOTIFY_SOCKET asks for, or OFF. A vsock address (systemd
      # in a VM) is not supported and says so.
      def self.from_env(log, env = ENV)
        target = env["NOTIFY_SOCKET"].to_s
        return OFF if target.empty?
        unless target.start_with?("/", "@")
          log.error("NOTIFY_SOCKET=#{target} is not a UNIX socket path or @abstract name; not notifying systemd")
          return OFF
        end

        new(target, log)
      end

      attr_reader :target

      def initialize(target, log)
        @target = target
        # "@name" is Linux's abstract namespace: a leading NUL byte, no file.
        @address = Addrinfo.unix(target.start_with?("@") ? "\0#{target[1..]}" : target)
        @log = log
        @socket = nil
        @failed = false
        @last_status = nil
        @lock = Mutex.new # the signal thread, the watchdog thread and the main loop all send
      end

      def enabled? = true

      # Sends one datagram with these fields (READY: 1 becomes "READY=1").
      def notify(**fields)
        message = fields.map { |name, value| "#{name}=#{value}\n" }.join
        @lock.synchronize { deliver(message) }
      end

      # main_pid: this process took over from a previous master (hot restart).
      def ready(status: nil, main_pid: nil)
        fields = {}
        fields[:MAINPID] = main_pid if main_pid
        fields[:READY] = 1
        fields[:STATUS] = remember(status) if status
        notify(**fields)
      end

      # MONOTONIC_USEC tells systemd which reload this is (systemd.service(5)).
      def reloading(status: nil)
        usec = Process.clock_gettime(Process::CLOCK_MONOTONIC, :microsecond)
        fields = { RELOADING: 1, MONOTONIC_USEC: usec }
        fields[:STATUS] = remember(status) if status
        notify(**fields)
      end

      def stopping(status: nil)
        fields = { STOPPING: 1 }
        fields[:STATUS] = remember(status) if status
        notify(**fields)
      end

      # Only a changed text is sent: the master recomputes it every tick.
      def status(text)
        return if text == @last_status

        notify(STATUS: remember(text))
      end

      def watchdog = notify(WATCHDOG: 1)

      private

      def remember(text) = @last_status = text

      def deliver(message)
        @socket ||= Socket.new(:UNIX, :DGRAM).tap { |s| s.close_on_exec = true }
        @socket.send(message, 0, @address)
        true
      rescue SystemCallError, IOError => e
        failed(e)
      end

      def failed(error)
        return false if @failed

        @failed = true
        @log.error("cannot notify systemd at NOTIFY_SOCKET=#{@target}: #{error.message}")
        false
      end
    end
  end
end
