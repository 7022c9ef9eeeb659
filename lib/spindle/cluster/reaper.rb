# frozen_string_literal: true

module Spindle
  module Cluster
    # Who left: every exited child the master waits for, each logged with its
    # exit status (an expected exit as information, an unexpected one as an
    # error, a mold's with what its loss means), then told to whoever counts
    # on it: the Supervisor (a boot that failed), the Reforker (a refork's
    # mold or first worker), the Takeover (a successor that exited), and
    # any other process the master started (others: its Sidecars).
    #
    # Ports, so a test drives it with fake children and made-up statuses:
    #   wait    -> { [pid, status] or nil } (Process.wait2 without blocking)
    #   others  ->(pid, status) { ... } an exit that is no child's
    class Reaper
      def initialize(children:, supervisor:, reforker:, takeover:, phase:, config:, log:,
                     wait: -> { Process.wait2(-1, Process::WNOHANG) }, others: ->(_pid, _status) {})
        @children = children
        @supervisor = supervisor
        @reforker = reforker
        @takeover = takeover
        @phase = phase
        @refork_after = config.refork_after
        @log = log
        @wait = wait
        @others = others
      end

      def self.status(status)
        status.signaled? ? "killed by signal #{Signal.signame(status.termsig)}" : "exit status #{status.exitstatus}"
      end

      # Every tick of the master's loop.
      def reap
        loop do
          pid, status = @wait.call
          return unless pid
          next @takeover.successor_exited(status) if pid == @takeover.successor

          child = @children.by_pid(pid)
          child ? exited(child, pid, status) : @others.call(pid, status)
        end
      rescue Errno::ECHILD
        nil
      end

      private

      # While the master stops, every exit is expected and no refork counts.
      def exited(child, pid, status)
        @supervisor.boot_failed(child) if child.booting?
        log(child, pid, Reaper.status(status))
        @children.remove(child)
        @reforker.exited(child, Reaper.status(status)) unless @phase.draining?
      end

      def log(child, pid, how)
        return @log.info("spindle: #{name(child)} removed (pid #{pid}, #{how})") if expected?(child)

        @log.error("#{name(child)} (pid #{pid}) died: #{how}#{mold_lost(child)}")
      end

      def name(child)
        case child.state
        when :mold_pending then "worker #{child.index} (becoming the mold of generation #{@reforker.target})"
        when :mold_trial then "mold (generation #{child.generation}, its first worker not serving yet)"
        when :mold, :mold_retiring then "mold (generation #{child.generation})"
        else "worker #{child.index}"
        end
      end

      # A mold leaves when a newer one replaces it, or when everything stops.
      def expected?(child)
        @phase.draining? || %i[retiring killed mold_retiring].include?(child.state)
      end

      # What an unexpected exit cost.
      def mold_lost(child)
        case child.state
        when :mold_pending, :mold_trial
          "; refork to generation #{@reforker.target} failed; the other workers keep serving, and " \
            "#{@refork_after ? 'automatic reforks wait until one succeeds' : 'the next refork starts afresh'}"
        when :mold then "; until the next refork, new workers start from the master"
        end
      end
    end
  end
end
