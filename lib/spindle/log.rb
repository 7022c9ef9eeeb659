# frozen_string_literal: true

require_relative "log/sink"
require_relative "log/line_format"
require_relative "log/access_log"
require_relative "log/reopen"
require_relative "log/throttle"
require_relative "log/drop_report"

module Spindle
  # Spindle's log. Every line says when (ISO 8601 UTC, milliseconds), which
  # process (pid and role: master, worker N, mold, single) and how serious
  # (INFO, WARN, ERROR), in text or JSON (Log::LineFormat). Lines go to
  # stdout (info) and stderr (warnings and errors), or all to --log-file.
  # Each line is written whole, in one write, so threads and processes do not
  # interleave within one. Anything that came from the network is escaped
  # before it is printed, so a request cannot forge log lines or send terminal
  # escapes to whoever reads them.
  #
  # The access log (--access-log) is a separate file with one line per
  # request (Log::AccessLog); #access_log is nil when it is off, and then no
  # request costs anything here.
  #
  # HUP reopens both files (#reopen, registered with Reopen by Log.build).
  #
  # A line that cannot be written is dropped and counted (Sink); the access
  # log's drops are also reported here (Log::DropReport).
  class Log
    CONTROL = /[\x00-\x1f\x7f"\\]/
    # Network bytes for the access log: also every byte above ASCII, so that
    # a line is plain ASCII whatever the client sent (JSON needs valid text).
    CONTROL_AND_HIGH = /[\x00-\x1f\x7f-\xff"\\]/n

    attr_reader :role, :pid, :access_log

    # The log bin/spindle and the rackup handler run with: the flags'
    # destinations and formats, reopened on HUP. Raises Config::Error when a
    # file cannot be opened.
    def self.build(config)
      file = config.log_file && open_sink(config.log_file, "log_file")
      log = new(out: file || $stdout, err: file || $stderr, quiet: config.quiet, format: config.log_format,
                role: config.cluster? ? "master" : "single")
      access = config.access_log || ("-" if config.log_requests)
      if access
        watcher = DropReport.new(log, access == "-" ? "access log (stdout)" : "access log #{access}")
        sink = access == "-" ? Sink.new($stdout, watcher: watcher) : open_sink(access, "access_log", watcher)
        log.access_log = AccessLog.new(sink, config.access_log_format, log)
      end
      Reopen.register("reopening log files") { log.reopen }
      log
    end

    # An absolute path: HUP reopens the same file even if the app changed
    # directory since.
    def self.open_sink(path, what, watcher = nil)
      Sink.open(File.expand_path(path), watcher: watcher)
    rescue SystemCallError => e
      raise Config::Error, "#{what} #{path}: cannot open: #{e.message}"
    end

    # out and err: IOs or Sinks (one Sink for both: --log-file).
    def initialize(out: $stdout, err: $stderr, quiet: false, format: "text", role: "single")
      @out = out.is_a?(Sink) ? out : Sink.new(out)
      @err = err.equal?(out) ? @out : (err.is_a?(Sink) ? err : Sink.new(err))
      @quiet = quiet
      @json = format == "json"
      @access_log = nil
      become(role)
    end

    attr_writer :access_log

    # Called in each process this one forks into (a worker, the mold): the
    # role its lines carry, and its own pid.
    def become(role)
      @role = role
      @pid = Process.pid
      [@out, @err, @access_log].uniq.each { |sink| sink&.forked }
      self
    end

    # Always printed, also with --quiet: the start-up line.
    def announce(line) = emit(@out, :info, line)

    def info(line)
      emit(@out, :info, line) unless @quiet
    end

    def warn(line) = emit(@err, :warn, "spindle: #{line}")

    def error(line) = emit(@err, :error, "spindle: #{line}")

    def exception(error, context)
      trace = (error.backtrace || []).first(20).map { |l| "\n    #{l}" }.join
      emit(@err, :error, "spindle: #{context}: #{error.class}: #{self.class.escape(error.message)}#{trace}")
    end

    # Lines this process could not write (Sink#dropped), by log: "server"
    # and, with --access-log, "access". For the metrics.
    def dropped_lines
      server = @out.dropped + (@err.equal?(@out) ? 0 : @err.dropped)
      @access_log ? { "server" => server, "access" => @access_log.dropped } : { "server" => server }
    end

    # HUP: the log file and the access log, opened afresh at their paths.
    def reopen
      @out.reopen
      @err.reopen unless @err.equal?(@out)
      @access_log&.reopen
    end

    # A choice among names (--log-format, --access-log-format).
    def self.check_choice(raw, names, what)
      name = raw.to_s
      return name if names.include?(name)

      raise Config::Error, "#{what} must be one of #{names.join(', ')}, got #{raw.inspect}"
    end

    def self.escape(text)
      text.b.gsub(CONTROL) { |c| format("\\x%02x", c.ord) }
    end

    # The parser's values are already binary, and most need no escape: those
    # are returned as they are (no copy: the access log runs per request).
    def self.escape_bytes(text)
      text = text.b unless text.encoding == Encoding::BINARY
      return text unless text.match?(CONTROL_AND_HIGH)

      text.gsub(CONTROL_AND_HIGH) { |c| format("\\x%02x", c.ord) }
    end

    private

    def emit(sink, level, message)
      sink.write(@json ? LineFormat.json(@pid, @role, level, message) : LineFormat.text(@pid, @role, level, message))
    end
  end
end
