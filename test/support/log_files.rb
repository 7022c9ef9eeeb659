# frozen_string_literal: true

require "json"

# Reading Spindle's log lines back in tests (docs/LOGGING.md): the text
# format's fields, JSON lines, and a file that may not exist yet.
module LogFiles
  # 2026-11-23T05:37:41.123Z 4711 [worker 0] INFO message
  TEXT_LINE = /\A(?<time>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z) (?<pid>\d+) \[(?<role>[^\]]+)\] (?<level>INFO|WARN|ERROR) (?<message>.*)\z/

  Line = Struct.new(:time, :pid, :role, :level, :message, keyword_init: true)

  # The log lines of a text log (backtrace continuation lines skipped).
  def text_lines(text)
    text.lines.filter_map do |line|
      match = TEXT_LINE.match(line.chomp)
      match && Line.new(time: match[:time], pid: Integer(match[:pid]), role: match[:role],
                        level: match[:level], message: match[:message])
    end
  end

  def read_log(path) = File.exist?(path) ? File.read(path) : ""

  # A server started with --log-file LOG_PATH prints its start-up line there,
  # not on stdout: SpindleProcess.start would wait for it in vain. This waits
  # for it in the file and fills in the process's binds from it.
  def spawn_with_log_file(log_path, *args, **options)
    process = SpindleProcess.new(["--log-file", log_path, *args], **options)
    @processes << process
    line = wait_until("the start-up line in #{log_path}", deadline: SpindleProcess::START_DEADLINE) do
      flunk "bin/spindle exited before it started:\n#{process.output}\n#{read_log(log_path)}" unless process.alive?
      SpindleProcess::START_LINE.match(read_log(log_path))
    end
    process.binds.replace(line[1].split(",").map { |uri| SpindleProcess.parse_bind(uri) })
    process
  end

  def json_lines(path) = read_log(path).lines.map { |line| JSON.parse(line) }
end
