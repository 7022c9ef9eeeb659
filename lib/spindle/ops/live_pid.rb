# frozen_string_literal: true

module Spindle
  # Whether a process id names a running process (signal 0 delivers nothing).
  module LivePid
    def self.alive?(pid)
      Process.kill(0, pid)
      true
    rescue Errno::ESRCH
      false
    rescue Errno::EPERM
      true # another user's process: alive
    end
  end
end
