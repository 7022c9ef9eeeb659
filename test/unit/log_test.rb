# frozen_string_literal: true

require_relative "../test_helper"
require "json"
require "time"
require "stringio"
require "tmpdir"
require "spindle/log"
require "spindle/config"

# The log's lines, formats, escaping and reopening, in process.
class LogTest < Minitest::Test
  TEXT_LINE = /\A(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z) (\d+) \[([^\]]+)\] (INFO|WARN|ERROR) (.*)\n\z/

  def setup
    @dir = Dir.mktmpdir("spindle-log")
  end

  def teardown
    FileUtils.rm_rf(@dir)
  end

  def test_a_text_line_has_a_utc_timestamp_the_pid_the_role_and_the_level
    out = StringIO.new
    Spindle::Log.new(out: out, err: out, role: "worker 3").info("hello")
    time, pid, role, level, message = TEXT_LINE.match(out.string).captures
    assert_in_delta Time.now.to_f, Time.iso8601(time).to_f, 60
    assert_equal [Process.pid.to_s, "worker 3", "INFO", "hello"], [pid, role, level, message]
  end

  def test_errors_go_to_err_and_info_to_out
    out = StringIO.new
    err = StringIO.new
    log = Spindle::Log.new(out: out, err: err, role: "master")
    log.info("fine")
    log.error("broken")
    assert_match(/ \[master\] INFO fine\n\z/, out.string)
    assert_match(/ \[master\] ERROR spindle: broken\n\z/, err.string)
  end

  def test_json_lines_parse_and_carry_every_field
    out = StringIO.new
    log = Spindle::Log.new(out: out, err: out, format: "json", role: "mold")
    log.info("one")
    log.exception(RuntimeError.new("two\nlines"), "context")
    lines = out.string.lines
    assert_equal 2, lines.size, "a JSON line never spans lines:\n#{out.string}"
    first, second = lines.map { |line| JSON.parse(line) }
    assert_equal({ "pid" => Process.pid, "role" => "mold", "level" => "info", "message" => "one" },
                 first.except("time"))
    assert_match(/\A\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\z/, first["time"])
    assert_equal "error", second["level"]
    assert_includes second["message"], "context: RuntimeError: two\\x0alines"
  end

  def test_become_sets_the_role_and_the_pid_of_a_forked_process
    out = StringIO.new
    log = Spindle::Log.new(out: out, err: out, role: "master")
    reader, writer = IO.pipe
    pid = fork do
      reader.close
      log.become("worker 1")
      writer.write("#{log.role} #{log.pid}")
      exit!(0)
    end
    writer.close
    assert_equal "worker 1 #{pid}", reader.read
    Process.wait(pid)
    assert_equal "master", log.role
  end

  def test_a_file_sink_reopens_at_its_path_after_a_move
    path = File.join(@dir, "server.log")
    sink = Spindle::Log::Sink.open(path)
    log = Spindle::Log.new(out: sink, err: sink)
    log.info("before")
    File.rename(path, "#{path}.1")
    log.info("still old")
    log.reopen
    log.info("after")
    assert_equal ["before", "still old"], File.readlines("#{path}.1").map { |l| l.split(" INFO ").last.chomp }
    assert_equal ["after"], File.readlines(path).map { |l| l.split(" INFO ").last.chomp }
  end

  def test_reopen_runs_every_action_even_after_one_fails
    out = StringIO.new
    log = Spindle::Log.new(out: out, err: out)
    ran = []
    actions = [Spindle::Reopen.register("a") { ran << :a },
               Spindle::Reopen.register("broken") { raise "nope" },
               Spindle::Reopen.register("c") { ran << :c }]
    assert_equal ["broken"], Spindle::Reopen.run(log)
    assert_equal %i[a c], ran
    assert_match(/HUP: broken failed: RuntimeError: nope/, out.string)
  ensure
    actions&.each { |action| Spindle::Reopen.unregister(action) }
  end

  # /dev/full fails every write with ENOSPC, as a full disk does.
  def test_lines_a_full_disk_refuses_are_dropped_counted_and_reported_once
    err = StringIO.new
    log = Spindle::Log.new(out: StringIO.new, err: err)
    report = Spindle::Log::DropReport.new(log, "access log /dev/full")
    sink = Spindle::Log::Sink.open("/dev/full", watcher: report)
    log.access_log = Spindle::Log::AccessLog.new(sink, "common", log)

    3.times { refute sink.write("a line\n"), "a dropped line is no error for the caller" }
    assert_equal 3, sink.dropped
    assert_equal({ "server" => 0, "access" => 3 }, log.dropped_lines)
    assert_equal 1, err.string.lines.size, "the first drop is reported, the next ones within the minute only counted"
    assert_match(%r{ERROR spindle: access log /dev/full: cannot write \(No space left on device\): line dropped\n\z},
                 err.string)
  end

  def test_a_sink_that_writes_again_says_how_many_lines_were_dropped
    err = StringIO.new
    log = Spindle::Log.new(out: StringIO.new, err: err)
    path = File.join(@dir, "access.log")
    File.symlink("/dev/full", path) # full, until the link goes and the file is opened again (HUP)
    sink = Spindle::Log::Sink.open(path, watcher: Spindle::Log::DropReport.new(log, "access log #{path}"))
    2.times { refute sink.write("lost\n") }
    File.unlink(path)
    sink.reopen
    assert sink.write("kept\n")
    assert_equal "kept\n", File.read(path)
    assert_equal 2, sink.dropped
    assert_match(/WARN spindle: access log #{Regexp.escape(path)}: written again, after 2 dropped line\(s\)\n\z/,
                 err.string)
  end

  def test_a_forked_process_counts_its_own_drops
    log = Spindle::Log.new(out: Spindle::Log::Sink.open("/dev/full"), err: StringIO.new)
    log.info("dropped in the parent")
    assert_equal({ "server" => 1 }, log.dropped_lines)
    reader, writer = IO.pipe
    pid = fork do
      reader.close
      log.become("worker 0")
      writer.write(log.dropped_lines.inspect)
      exit!(0)
    end
    writer.close
    assert_equal({ "server" => 0 }.inspect, reader.read)
    Process.wait(pid)
  end

  def test_unknown_formats_are_refused
    error = assert_raises(Spindle::Config::Error) { Spindle::Config::BY_NAME[:log_format].value("xml") }
    assert_match(/log_format must be one of text, json/, error.message)
    assert_raises(Spindle::Config::Error) { Spindle::Config::BY_NAME[:access_log_format].value("apache") }
    assert_equal "json", Spindle::Config::BY_NAME[:access_log_format].value("json")
  end
end

# The access log's formats, fed an env as the handler would.
class AccessLogTest < Minitest::Test
  ENV_BASE = {
    "REMOTE_ADDR" => "192.0.2.7", "REQUEST_METHOD" => "POST", "PATH_INFO" => "/orders",
    "QUERY_STRING" => "page=2", "SERVER_PROTOCOL" => "HTTP/1.1", "HTTP_USER_AGENT" => "probe/1.0",
    "HTTP_X_REQUEST_ID" => "req-42", "HTTP_AUTHORIZATION" => "Bearer sekrit-token",
    "HTTP_COOKIE" => "session=sekrit-cookie", "rack.input" => StringIO.new("sekrit-body"),
    "spindle.queue_time" => 0.0045,
  }.freeze

  def line(format, env = ENV_BASE)
    out = StringIO.new
    log = Spindle::Log.new(out: out, err: out, role: "worker 0")
    access = Spindle::Log::AccessLog.new(Spindle::Log::Sink.new(out), format, log)
    access.record(env, access.capture(env), 201, 17, 0.0123)
    out.string
  end

  def test_common
    assert_match(%r{\A192\.0\.2\.7 - - \[\d\d/\w{3}/\d{4}:\d\d:\d\d:\d\d \+0000\] "POST /orders\?page=2 HTTP/1\.1" 201 17\n\z},
                 line("common"))
  end

  def test_combined_adds_referer_user_agent_request_id_duration_and_queue_time
    assert_match(%r{"POST /orders\?page=2 HTTP/1\.1" 201 17 "-" "probe/1\.0" "req-42" 12\.300 4\.500\n\z}, line("combined"))
  end

  def test_without_a_queue_time_the_field_is_a_dash
    assert_match(/ 12\.300 -\n\z/, line("combined", ENV_BASE.except("spindle.queue_time")))
    assert_nil JSON.parse(line("json", ENV_BASE.except("spindle.queue_time")))["queue_ms"]
  end

  def test_json
    fields = JSON.parse(line("json"))
    assert_equal({ "pid" => Process.pid, "role" => "worker 0", "remote_addr" => "192.0.2.7", "method" => "POST",
                   "target" => "/orders?page=2", "protocol" => "HTTP/1.1", "status" => 201, "bytes" => 17,
                   "duration_ms" => 12.3, "queue_ms" => 4.5, "referer" => nil, "user_agent" => "probe/1.0", "request_id" => "req-42" },
                 fields.except("time"))
  end

  def test_never_the_body_authorization_or_cookie
    %w[common combined json].each do |format|
      refute_match(/sekrit/, line(format), format)
    end
  end

  # A client cannot forge a line, break the JSON or reach a terminal.
  def test_network_bytes_are_escaped
    env = ENV_BASE.merge("HTTP_USER_AGENT" => "a\"b\\c\e[31m\xff\nforged".b)
    assert_includes line("combined", env), '"a\x22b\x5cc\x1b[31m\xff\x0aforged"'
    assert_equal 1, line("combined", env).lines.size
    assert_equal "a\\x22b\\x5cc\\x1b[31m\\xff\\x0aforged", JSON.parse(line("json", env))["user_agent"]
  end

  def test_a_refused_request_has_no_request_to_show
    out = StringIO.new
    log = Spindle::Log.new(out: out, err: out)
    access = Spindle::Log::AccessLog.new(Spindle::Log::Sink.new(out), "combined", log)
    access.record({ "REMOTE_ADDR" => "192.0.2.7" }, nil, 400, 12, nil)
    assert_match(/\] "-" 400 12 "-" "-" "-" - -\n\z/, out.string)
  end
end
