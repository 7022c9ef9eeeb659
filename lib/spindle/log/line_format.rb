# frozen_string_literal: true

require "json"

module Spindle
  class Log
    # How one server log line looks (--log-format). Both carry the same
    # fields: when (ISO 8601, UTC, milliseconds), which process (pid and role:
    # master, worker N, mold, single), the level, and the message.
    #
    #   text: 2026-11-23T05:37:41.123Z 4711 [worker 0] INFO draining (up to 30.0s)
    #   json: {"time":"2026-11-23T05:37:41.123Z","pid":4711,"role":"worker 0","level":"info","message":"..."}
    #
    # A text message that spans lines (a backtrace) keeps its indented
    # continuation lines; a JSON line never spans lines (JSON escapes "\n").
    module LineFormat
      NAMES = %w[text json].freeze
      LEVELS = { info: "INFO", warn: "WARN", error: "ERROR" }.freeze

      module_function

      def timestamp(time = Time.now)
        time.utc.strftime("%Y-%m-%dT%H:%M:%S.%LZ")
      end

      def text(pid, role, level, message)
        "#{timestamp} #{pid} [#{role}] #{LEVELS.fetch(level)} #{message}\n"
      end

      # Messages are escaped of network bytes before they get here, so they
      # are valid UTF-8 or plain ASCII; a stray invalid byte is replaced
      # rather than failing the line.
      def json(pid, role, level, message)
        message = message.dup.force_encoding(Encoding::UTF_8).scrub unless message.ascii_only?
        "#{JSON.generate({ 'time' => timestamp, 'pid' => pid, 'role' => role, 'level' => level.to_s,
                           'message' => message })}\n"
      end
    end
  end
end
