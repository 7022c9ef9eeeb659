# frozen_string_literal: true

module Spindle
  module Cluster
    # What the master logs when a child leaves, with its exit status: an
    # expected exit as information, an unexpected one as an error, and a
    # mold's (or a mold-to-be's) with what its loss means.
    class ExitLine
      # stopping: the master stops, so every exit is expected.
      def initialize(child, pid, status, reforker:, refork_after:, stopping:)
        @child = child
        @pid = pid
        @status = status
        @reforker = reforker
        @refork_after = refork_after
        @stopping = stopping
      end

      def self.status(status)
        status.signaled? ? "killed by signal #{Signal.signame(status.termsig)}" : "exit status #{status.exitstatus}"
      end

      def write(log)
        return log.info("spindle: #{name} removed (pid #{@pid}, #{ExitLine.status(@status)})") if expected?

        log.error("#{name} (pid #{@pid}) died: #{ExitLine.status(@status)}#{mold_lost}")
      end

      private

      def name
        case @child.state
        when :mold_pending then "worker #{@child.index} (becoming the mold of generation #{@reforker.target})"
        when :mold_trial then "mold (generation #{@child.generation}, its first worker not serving yet)"
        when :mold, :mold_retiring then "mold (generation #{@child.generation})"
        else "worker #{@child.index}"
        end
      end

      # A mold leaves when a newer one replaces it, or when everything stops.
      def expected?
        @stopping || %i[retiring killed mold_retiring].include?(@child.state)
      end

      # What an unexpected exit cost.
      def mold_lost
        case @child.state
        when :mold_pending, :mold_trial
          "; refork to generation #{@reforker.target} failed; the other workers keep serving, and " \
            "#{@refork_after ? 'automatic reforks wait until one succeeds' : 'the next refork starts afresh'}"
        when :mold then "; until the next refork, new workers start from the master"
        end
      end
    end
  end
end
