# frozen_string_literal: true

require_relative "live_pid"

module Spindle
  # --pidfile PATH: the pid of the process an operator signals (the master, or
  # the single process), for init scripts, logrotate and monitoring.
  #
  # - Written atomically (a temporary file in the same directory, renamed over
  #   the path), so a reader never sees it empty or half written.
  # - A file naming a process that is gone, or a process that is not Spindle
  #   (the pid was reused), is stale and replaced. One naming a live Spindle
  #   process is a start-up error: two servers sharing a pid file would send
  #   each other's signals astray.
  # - A new master started by USR2 rewrites it once it takes over (the pid
  #   changes then); until then the file names its predecessor, which is
  #   allowed to be alive.
  # - Removed at exit only while it still holds this process's pid: an old
  #   master draining after a hot restart must not remove its successor's.
  class PidFile
    class Error < StandardError; end

    # The PidFile config asks for, or nil.
    def self.for(config, log)
      path = config.pidfile
      path && new(path, log)
    end

    attr_reader :path

    def initialize(path, log)
      @path = File.expand_path(path)
      @log = log
    end

    # Raises Error when the file names a live Spindle process other than
    # predecessor (the process this one replaces in a hot restart).
    def check!(predecessor: nil)
      pid = recorded
      return unless pid && pid != Process.pid && pid != predecessor
      return @log.info("spindle: pid file #{@path} names pid #{pid}, which is gone; replacing it") unless alive?(pid)
      return @log.info("spindle: pid file #{@path} names pid #{pid}, not a Spindle process; replacing it") unless spindle?(pid)

      raise Error, "pid file #{@path} names pid #{pid}, a Spindle process that is still running " \
                   "(stop it, or give this server another --pidfile)"
    end

    def write
      temporary = "#{@path}.#{Process.pid}.tmp"
      File.write(temporary, "#{Process.pid}\n")
      File.rename(temporary, @path)
    rescue SystemCallError => e
      File.unlink(temporary) if temporary && File.exist?(temporary)
      raise Error, "cannot write pid file #{@path}: #{e.message}"
    end

    # Called on every way out (clean stop, forced stop); never raises.
    def remove
      File.unlink(@path) if recorded == Process.pid
    rescue SystemCallError
      nil
    end

    # The pid the file holds, or nil (no file, or not a pid).
    def recorded
      Integer(File.read(@path).strip, 10, exception: false)
    rescue SystemCallError
      nil
    end

    private

    def alive?(pid) = LivePid.alive?(pid)

    # A master shows "spindle master" and a single process its command line
    # (bin/spindle, or rackup running the spindle handler).
    def spindle?(pid)
      File.binread("/proc/#{pid}/cmdline").include?("spindle")
    rescue SystemCallError
      true # cannot tell: better to refuse than to take over a live server's file
    end
  end
end
