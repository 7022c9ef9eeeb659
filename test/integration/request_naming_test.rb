# frozen_string_literal: true

require "json"
require "tmpdir"
require_relative "../support/spindle_process"

# Every app error line names the request: its method, its path (never the
# query, whose values may be secrets) and its request id, the client's or,
# when it sent none, the one the app's response carries. The access log takes
# the app's request id too, so its lines match the app's own log (Rails').
class RequestNamingTest < SpindleIntegrationTest
  serve_with "-b", LOOPBACK, app_path("app_errors")

  # path => what the line says before the request's name.
  ERRORS = {
    "/raise" => "app raised on",
    "/invalid" => "app returned an invalid response to",
    "/each" => "response to",
    "/close" => "body.close raised, for",
    "/callback" => "rack.response_finished callback raised, for",
    "/header" => "app response to",
  }.freeze

  def test_each_app_error_line_names_the_method_the_path_and_the_client_request_id
    ERRORS.each do |path, context|
      id = "client#{path.delete('/')}"
      roundtrip(request("GET", "#{path}?token=sekrit", [["X-Request-Id", id], ["Connection", "close"]]))
      assert server.wait_for_output(/#{Regexp.escape(context)} GET #{Regexp.escape(path)} \(request id #{id}\)/),
             "#{path}: no error line naming the request:\n#{server.output}"
    end
    refute_includes server.output, "sekrit", "the query stays out of the server log"
  end

  def test_without_a_client_id_the_line_names_the_id_of_the_app_response_if_any
    roundtrip(request("GET", "/raise", [["Connection", "close"]]))
    assert server.wait_for_output(%r{app raised on GET /raise \(no request id\): RuntimeError: boom}), server.output
    roundtrip(request("GET", "/close", [["Connection", "close"]]))
    assert server.wait_for_output(%r{body\.close raised, for GET /close \(request id app-close\): RuntimeError: boom in close}),
           server.output
  end

  def test_the_access_log_takes_the_app_request_id_when_the_client_sent_none
    Dir.mktmpdir("spindle-access") do |dir|
      %w[combined json].each do |format|
        access = File.join(dir, "#{format}.log")
        process = spawn_server("-b", LOOPBACK, "--access-log", access, "--access-log-format", format,
                               app_path("app_errors"))
        roundtrip(request("GET", "/orders", [["Connection", "close"]]), process)
        roundtrip(request("GET", "/rack2", [["Connection", "close"]]), process)
        roundtrip(request("GET", "/orders", [["X-Request-Id", "from-client"], ["Connection", "close"]]), process)
        lines = wait_until("three access lines") { (l = File.readlines(access)).size == 3 && l }
        # Sorted: a line is written once its response is out, so a pool
        # thread still logging one request may write after the next
        # request's thread (each id comes from its own request alone).
        assert_equal %w[app-orders app-rack2 from-client], lines.map { |line| request_id(format, line) }.sort, lines.join
      end
    end
  end

  private

  def request_id(format, line)
    return JSON.parse(line)["request_id"] if format == "json"

    line[/ "([^"]*)" [\d.]+ [\d.]+\n\z/, 1] # then the duration and the queue time
  end
end
