# frozen_string_literal: true

require "json"
require "tmpdir"
require_relative "../support/spindle_process"

# --static DIR on every engine: the real server answers files under DIR
# without the app (a small one from memory, a 1 MB one with sendfile), with
# 304 for a client that has it, and leaves everything else to the app.
class StaticFilesIntegrationTest < SpindleIntegrationTest
  ENGINES = {
    "blocking" => %w[--engine blocking],
    "threads" => %w[--engine threads -t 2:4],
    "fibers" => %w[--engine fibers],
    "hybrid" => %w[--engine hybrid --loops 2],
  }.freeze
  BIG = 1024 * 1024

  def setup
    @dir = Dir.mktmpdir("spindle-static")
    File.write(File.join(@dir, "hello.txt"), "hello from disk\n")
    File.write(File.join(@dir, ".secret"), "no\n")
    @big = Random.new(16).bytes(BIG)
    File.binwrite(File.join(@dir, "big.bin"), @big)
  end

  def teardown
    FileUtils.rm_rf(@dir)
  end

  ENGINES.each do |label, flags|
    define_method("test_files_are_served_without_the_app_on_#{label}") do
      process = spawn_server("-b", LOOPBACK, *flags, "--static", @dir, app_path("all"))
      small = get(process, "/hello.txt?probe-51a7")
      assert_equal [200, "hello from disk\n", "text/plain"], [small.status, small.body, small["content-type"]],
                   small.to_s
      refute app_saw?("probe-51a7", process), "the app was called for a static file"

      big = get(process, "/big.bin")
      assert_equal [200, BIG], [big.status, big.body.bytesize]
      assert_equal @big, big.body.b, "the 1 MB file came back altered"

      cached = get(process, "/hello.txt", [["If-None-Match", small["etag"]]])
      assert_equal [304, ""], [cached.status, cached.body]
      head = roundtrip(request("HEAD", "/big.bin", [["Connection", "close"]]), process, head: true)
      assert_equal [200, BIG.to_s, ""], [head.status, head["content-length"], head.body]
    end

    define_method("test_what_is_not_a_file_goes_to_the_app_on_#{label}") do
      process = spawn_server("-b", LOOPBACK, *flags, "--static", @dir, app_path("all"))
      ["/missing.txt", "/.secret", "/%2e%2e/etc/passwd", "/"].each do |path|
        response = get(process, path)
        assert_equal 200, response.status, response.to_s
        assert_equal path, JSON.parse(response.body)["path"], "#{path} should reach the app (echo)"
      end
      posted = roundtrip(request("POST", "/hello.txt", [["Connection", "close"]], body: "x"), process)
      assert_equal "POST", JSON.parse(posted.body)["method"]
    end
  end

  private

  def get(process, path, headers = [])
    roundtrip(request("GET", path, [["Connection", "close"], *headers]), process)
  end
end
