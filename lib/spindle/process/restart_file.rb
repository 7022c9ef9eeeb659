# frozen_string_literal: true

module Spindle
  # --restart-file PATH (Rails: tmp/restart.txt, which `bin/rails restart`
  # touches): says when PATH's modification time has changed since the
  # server started, or since the last change it reported. Polled, at most
  # once per INTERVAL: one stat a second costs nothing, and needs no gem.
  # A file that appears counts as a change; one that disappears does not.
  #
  # The cluster's master asks on its loop; a process serving alone, on its
  # services thread (SingleServices). Which restart follows is theirs to say.
  # Ports, so a test drives it with a fake clock and made-up times:
  #   mtime  ->(path) { Time or nil when absent }
  #   clock  -> { monotonic seconds }
  class RestartFile
    INTERVAL = 1.0

    attr_reader :path

    def self.for(config, **ports) = config.restart_file && new(config.restart_file, **ports)

    def self.mtime(path)
      File.mtime(path)
    rescue SystemCallError
      nil
    end

    def initialize(path, mtime: RestartFile.method(:mtime),
                   clock: -> { Process.clock_gettime(Process::CLOCK_MONOTONIC) })
      @path = path
      @mtime = mtime
      @clock = clock
      @seen = @mtime.call(path)
      @next_check = @clock.call + INTERVAL
    end

    # True once per change.
    def changed?
      now = @clock.call
      return false if now < @next_check

      @next_check = now + INTERVAL
      current = @mtime.call(@path)
      return false if current.nil? || current == @seen

      @seen = current
      true
    end
  end
end
