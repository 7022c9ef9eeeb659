# frozen_string_literal: true

require "json"
require "net/http"
require "open3"
require_relative "../support/spindle_process"

# Clients people actually use: Ruby's Net::HTTP and curl.
class RealClientsTest < SpindleIntegrationTest
  serve_with "-b", LOOPBACK, app_path("all")

  CURL = "/usr/bin/curl"

  def test_net_http_keep_alive_session
    Net::HTTP.start(server.host, server.port, open_timeout: 10, read_timeout: 10) do |http|
      get = http.get("/net-http?x=1")
      assert_equal "200", get.code
      assert_equal "x=1", JSON.parse(get.body)["query"]

      post = http.post("/net-http", "posted body", "Content-Type" => "text/plain")
      assert_equal "posted body", JSON.parse(post.body)["body"]

      head = http.head("/status/")
      assert_equal "12", head["content-length"]

      streamed = http.get("/stream?count=2")
      assert_equal "chunk-0\nchunk-1\nchunk-2\n", streamed.body
    end
  end

  def test_net_http_with_a_large_body
    payload = "z" * (2 * 1024 * 1024)
    response = Net::HTTP.start(server.host, server.port, read_timeout: 10) do |http|
      http.post("/upload", payload, "Content-Type" => "application/octet-stream")
    end
    assert_equal payload.bytesize, JSON.parse(response.body)["body_size"]
  end

  def test_curl_get_post_and_chunked_upload
    skip "no #{CURL}" unless File.executable?(CURL)

    assert_equal "/curl", JSON.parse(curl("#{server.url}/curl"))["path"]
    assert_equal "curl-data", JSON.parse(curl("-d", "curl-data", "#{server.url}/curl"))["body"]
    chunked = JSON.parse(curl("-H", "Transfer-Encoding: chunked", "--data-binary", "chunked-data", "#{server.url}/curl"))
    assert_equal "chunked-data", chunked["body"]
    assert_equal "chunk-0\nchunk-1\n", curl("#{server.url}/stream?count=1")
  end

  def test_curl_expect_100_continue_large_upload
    skip "no #{CURL}" unless File.executable?(CURL)

    Dir.mktmpdir("spcurl") do |dir|
      file = File.join(dir, "upload.bin")
      File.binwrite(file, "q" * (3 * 1024 * 1024))
      # curl sends Expect: 100-continue for a body this large and waits for the 100.
      report = JSON.parse(curl("-H", "Expect: 100-continue", "--data-binary", "@#{file}", "#{server.url}/upload"))
      assert_equal 3 * 1024 * 1024, report["body_size"]
    end
  end

  def test_curl_http_1_0
    skip "no #{CURL}" unless File.executable?(CURL)

    assert_equal "HTTP/1.0", JSON.parse(curl("--http1.0", "#{server.url}/ten"))["protocol"]
  end

  private

  def curl(*args)
    out, err, status = Open3.capture3(CURL, "--silent", "--show-error", "--fail", "--max-time", "10", *args)
    assert status.success?, "curl #{args.join(' ')} failed: #{err}"
    out
  end
end
