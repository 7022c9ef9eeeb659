# frozen_string_literal: true

require "tmpdir"
require_relative "../support/spindle_process"
require_relative "../support/log_files"

# The logs of a single process (docs/LOGGING.md): every line's fields, the
# JSON format, the access log's fields and what it never shows, and
# logrotate's way of rotating (move the files, send HUP).
class LoggingTest < SpindleIntegrationTest
  include LogFiles

  SECRETS = %w[auth-sekrit-5d1 cookie-sekrit-9e2 body-sekrit-77a].freeze

  def setup
    @dir = Dir.mktmpdir("spindle-logging")
  end

  def teardown
    FileUtils.rm_rf(@dir)
  end

  def path(name) = File.join(@dir, name)

  def test_every_line_has_a_timestamp_the_pid_the_role_and_a_level
    process = spawn_server("-b", LOOPBACK, app_path("all"))
    process.stop(:TERM)
    lines = process.output.lines.reject { |l| l.start_with?("    ") } # backtraces' continuation lines
    refute_empty lines
    parsed = text_lines(process.output)
    assert_equal lines.size, parsed.size, "every line has the fields:\n#{process.output}"
    assert_equal [[process.pid, "single"]], parsed.map { |l| [l.pid, l.role] }.uniq
    assert_includes parsed.map(&:message), "spindle: stopped"
  end

  def test_json_lines_parse
    log = path("server.log")
    process = spawn_with_log_file(log, "-b", LOOPBACK, "--log-format", "json", app_path("all"))
    process.stop(:TERM)
    lines = json_lines(log)
    assert_operator lines.size, :>=, 3, File.read(log)
    lines.each do |line|
      assert_equal %w[level message pid role time], line.keys.sort
      assert_equal [process.pid, "single"], [line["pid"], line["role"]]
      assert_match(/\A\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\z/, line["time"])
    end
    assert_empty process.output, "with --log-file, nothing on stdout or stderr"
  end

  def test_access_log_fields_in_every_format
    %w[common combined json].each do |format|
      access = path("access-#{format}.log")
      process = spawn_server("-b", LOOPBACK, "--access-log", access, "--access-log-format", format, app_path("echo"))
      get = roundtrip(request("GET", "/items?page=2", [["User-Agent", "probe/1.0"], ["X-Request-Id", "rid-31f"],
                                                      ["Connection", "close"]]), process)
      post = roundtrip(request("POST", "/orders", [["Authorization", "Bearer #{SECRETS[0]}"],
                                                   ["Cookie", "session=#{SECRETS[1]}"], ["Connection", "close"]],
                               body: "item=#{SECRETS[2]}"), process)
      wait_until("two #{format} access lines") { read_log(access).lines.size == 2 }
      check_access_lines(format, read_log(access), get.body.bytesize, post.body.bytesize)
      SECRETS.each { |secret| refute_includes read_log(access), secret, "#{format}: a secret was logged" }
      process.stop(:TERM)
    end
  end

  def test_a_log_file_that_cannot_be_opened_stops_the_start
    process = run_spindle("-b", LOOPBACK, "--access-log", path("missing/access.log"), app_path("echo"))
    assert_equal 2, process.status&.exitstatus, process.output
    assert_match(%r{\Aspindle: access_log /\S+/missing/access\.log: cannot open: No such file or directory}, process.stderr)
    assert_equal 1, process.stderr.lines.size, process.stderr
  end

  def test_log_requests_is_the_access_log_on_stdout
    process = spawn_server("--log-requests", "-b", LOOPBACK, app_path("echo"))
    response = roundtrip(request("GET", "/logged-7c1", [["Connection", "close"]]), process)
    assert process.wait_for_output(%r{"GET /logged-7c1 HTTP/1\.1" 200 #{response.body.bytesize} }), process.output
  end

  def test_no_access_log_without_the_flag
    process = spawn_server("-b", LOOPBACK, app_path("echo"))
    roundtrip(request("GET", "/unlogged-4e0", [["Connection", "close"]]), process)
    process.stop(:TERM)
    refute_match(/unlogged-4e0/, process.output)
  end

  def test_a_refused_request_is_in_the_access_log
    access = path("access.log")
    process = spawn_server("-b", LOOPBACK, "--access-log", access, app_path("echo"))
    roundtrip("GET /a\x01b HTTP/1.1\r\nHost: a\r\n\r\n", process)
    wait_until("the access line") { read_log(access).include?('"-" 400 ') }
  end

  # logrotate: move the files away, send HUP (postrotate); new lines land in
  # new files at the old paths, old lines stay in the moved ones.
  %w[threads fibers].each do |engine|
    define_method(:"test_hup_reopens_the_log_files_#{engine}") do
      log = path("server.log")
      access = path("access.log")
      process = spawn_with_log_file(log, "-b", LOOPBACK, "--engine", engine, "--access-log", access,
                                    "--access-log-format", "json", app_path("echo"))
      roundtrip(request("GET", "/before-rotation", [["Connection", "close"]]), process)
      wait_until("the first access line") { read_log(access).include?("/before-rotation") }
      File.rename(log, "#{log}.1")
      File.rename(access, "#{access}.1")
      process.signal(:HUP)
      wait_until("the reopen logged in the new file") { read_log(log).include?("HUP: log files reopened") }
      roundtrip(request("GET", "/after-rotation", [["Connection", "close"]]), process)
      wait_until("the access line in the new file") { read_log(access).include?("/after-rotation") }
      assert_equal ["/after-rotation"], json_lines(access).map { |l| l["target"] }
      assert_equal ["/before-rotation"], json_lines("#{access}.1").map { |l| l["target"] }
      assert_equal [[process.pid, "single"]], text_lines(read_log(log)).map { |l| [l.pid, l.role] }.uniq
      assert_match(/INFO spindle \S+ engine=#{engine}/, read_log("#{log}.1"))
      assert process.alive?
    end
  end

  # A forced exit (a second TERM) says which requests it cut off: method and
  # path, never a body or a header.
  def test_a_forced_stop_logs_the_requests_it_cuts_off
    process = spawn_server("-b", LOOPBACK, app_path("all"))
    gate = rendezvous
    held = connect(process)
    held.write(request("GET", "/gate?path=#{gate.path}", [["Authorization", "Bearer #{SECRETS[0]}"]]))
    gate.await("entered")
    process.signal(:TERM)
    assert process.wait_for_output(/draining/), process.output
    process.signal(:TERM)
    assert_equal 1, process.wait_for_exit&.exitstatus, process.output
    errors = text_lines(process.stderr).select { |l| l.level == "ERROR" }.map(&:message)
    assert_includes errors, "spindle: second stop signal: exiting at once"
    assert_includes errors, "spindle: cut off 1 request(s) in flight: GET /gate"
    refute_includes process.output, SECRETS[0]
  end

  private

  def check_access_lines(format, text, get_bytes, post_bytes)
    get, post = text.lines
    if format == "json"
      get, post = [get, post].map { |line| JSON.parse(line) }
      assert_equal({ "remote_addr" => "127.0.0.1", "method" => "GET", "target" => "/items?page=2",
                     "protocol" => "HTTP/1.1", "status" => 200, "bytes" => get_bytes, "referer" => nil,
                     "user_agent" => "probe/1.0", "request_id" => "rid-31f", "role" => "single" },
                   get.except("time", "pid", "duration_ms", "queue_ms"))
      assert_equal [%w[POST /orders], post_bytes, nil], [post.values_at("method", "target"), post["bytes"], post["request_id"]]
      assert_kind_of Float, get["duration_ms"]
      assert_kind_of Float, get["queue_ms"]
    else
      clf = %r{\A127\.0\.0\.1 - - \[\d\d/\w{3}/\d{4}:\d\d:\d\d:\d\d \+0000\] "GET /items\?page=2 HTTP/1\.1" 200 #{get_bytes}}
      assert_match(format == "common" ? /#{clf}\n\z/ : /#{clf} "-" "probe\/1\.0" "rid-31f" \d+\.\d{3} \d+\.\d{3}\n\z/, get)
      assert_match(%r{"POST /orders HTTP/1\.1" 200 #{post_bytes}( |\n)}, post)
    end
  end
end
