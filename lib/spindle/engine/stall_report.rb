# frozen_string_literal: true

module Spindle
  module Engine
    # The words of a stall warning (StallDetector): how long the loop lagged,
    # and where its thread was, as the innermost frames of the code the loop
    # ran for the app, without the loop's own.
    #
    # When the stack holds no app frame at all (only the scheduler's
    # `run_once!`, io-event's selector, Spindle's own files), the sample came
    # after the app's code had returned (a C call that kept Ruby's lock
    # returned, and the loop got back to its selector before the watchdog
    # could run), or the loop's own work held it (a garbage collection, many
    # ready fibers). The loop's frames are shown then, and the warning says
    # that no app frame was found, so nobody reads the selector as the culprit.
    class StallReport
      # How many of the innermost frames a warning shows.
      SHOWN_FRAMES = 16
      # The event loop's own machinery: Spindle's files and the gems that run
      # the loop. Their frames say where the loop is, never why it is held.
      SPINDLE_ROOT = File.expand_path("../../..", __dir__)
      SPINDLE_DIRS = %w[lib bin].map { |dir| "#{File.join(SPINDLE_ROOT, dir)}/" }.freeze
      LOOP_GEMS = %w[async io-event fiber-annotation nio4r].freeze
      # Where the app is called from: frames outside it are the loop's.
      HANDLER = "#{File.join(SPINDLE_ROOT, "lib", "spindle", "request", "handler.rb")}:"
      # Ruby's own methods written in Ruby (Kernel#loop from 3.3 on): kept
      # among the app's frames, but alone they are no app frame.
      RUBY_CORE = "<internal:"
      NO_APP_FRAME = "no app frame was found on the loop's thread: the code that held the loop had " \
                     "returned when it was sampled, or the loop's own work (GC, many ready fibers) held it"

      def initialize(threshold)
        @threshold = threshold
      end

      # lag: seconds the heartbeat was late; share: the loop thread's share of
      # it on the CPU (nil when unknown); backtrace: the loop thread's.
      def message(lag, share, backtrace)
        app = app_frames(backtrace)
        found = app.any? { |frame| !frame.start_with?(RUBY_CORE) }
        cpu = share ? ", on the CPU for #{(share.clamp(0, 1) * 100).round}% of it" : ""
        where = found ? "the loop's thread is at" : "#{NO_APP_FRAME}; the loop's thread is at"
        frames = (found ? app : backtrace).first(SHOWN_FRAMES)
        "event loop stalled for #{ms(lag)}ms (threshold #{ms(@threshold)}ms#{cpu}); #{where}:" \
          "\n    #{frames.join("\n    ")}"
      end

      # The innermost frames that are not the loop's own: the app's, its
      # middleware's and its libraries' (installed as gems or not), where the
      # code that held the loop is. The stack is cut where the handler called
      # the app (what is outside is the loop: fibers, tasks, Kernel#loop).
      def app_frames(backtrace)
        entry = backtrace.index { |frame| frame.start_with?(HANDLER) }
        inner = entry ? backtrace.first(entry) : backtrace
        internal = internal_dirs
        inner.reject { |frame| internal.any? { |dir| frame.start_with?(dir) } }
      end

      private

      def ms(seconds) = (seconds * 1000).round

      # Spindle's own directories, and those of the loop's gems that are loaded
      # (a bundle may vendor them anywhere, so their paths are asked for).
      def internal_dirs
        @internal_dirs ||= SPINDLE_DIRS + LOOP_GEMS.filter_map do |name|
          spec = Gem.loaded_specs[name]
          "#{spec.full_gem_path}/" if spec
        end
      end
    end
  end
end
