# frozen_string_literal: true

module Spindle
  # Spindle's log: lines to stdout, errors to stderr, each line written whole so
  # threads and processes do not interleave within one. Anything that came from
  # the network is escaped before it is printed, so a request cannot forge log
  # lines or send terminal escapes to whoever reads them.
  class Log
    CONTROL = /[\x00-\x1f\x7f"\\]/

    def initialize(out: $stdout, err: $stderr, quiet: false, requests: false)
      @out = out
      @err = err
      @quiet = quiet
      @requests = requests
    end

    def requests? = @requests

    # Always printed, also with --quiet: the start-up line.
    def announce(line) = emit(@out, line)

    def info(line)
      emit(@out, line) unless @quiet
    end

    def error(line) = emit(@err, "spindle: #{line}")

    def exception(error, context)
      trace = (error.backtrace || []).first(20).map { |l| "\n    #{l}" }.join
      emit(@err, "spindle: #{context}: #{error.class}: #{self.class.escape(error.message)}#{trace}")
    end

    def request(env, status, seconds)
      path = self.class.escape(env["PATH_INFO"].to_s)
      query = env["QUERY_STRING"].to_s
      path = "#{path}?#{self.class.escape(query)}" unless query.empty?
      emit(@out, format('%s "%s %s %s" %d %.1fms', env["REMOTE_ADDR"], env["REQUEST_METHOD"],
                        path, env["SERVER_PROTOCOL"], status.to_i, seconds * 1000))
    end

    def self.escape(text)
      text.b.gsub(CONTROL) { |c| format("\\x%02x", c.ord) }
    end

    private

    def emit(io, line)
      io.write("#{line}\n")
      io.flush
    rescue IOError, SystemCallError
      nil # a closed log must not take the server down
    end
  end
end
