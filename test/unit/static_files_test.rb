# frozen_string_literal: true

require "test_helper"
require "tmpdir"
require "pathname"
require "spindle/config"
require "spindle/request/static_files"

# --static DIR: which requests the server answers from DIR, and what it
# leaves to the app. Real files in a temporary directory.
class StaticFilesTest < Minitest::Test
  Config = Spindle::Config

  def setup
    @dir = Dir.mktmpdir("spindle-static")
    @root = File.join(@dir, "public")
    Dir.mkdir(@root)
    Dir.mkdir(File.join(@root, "css"))
    File.write(File.join(@root, "css", "app.css"), "body{}\n")
    File.write(File.join(@root, "hello.txt"), "hello\n")
    File.write(File.join(@root, "café.txt"), "accent\n")
    File.write(File.join(@root, ".env"), "SECRET=1\n")
    File.write(File.join(@dir, "outside.txt"), "not yours\n")
    @static = Spindle::StaticFiles.new(@root)
  end

  def teardown
    FileUtils.rm_rf(@dir)
  end

  def get(path, method = "GET", **headers)
    @static.response({ "REQUEST_METHOD" => method, "PATH_INFO" => path }.merge(headers.transform_keys(&:to_s)))
  end

  def test_a_file_under_the_root_is_answered_with_its_type_length_and_validators
    status, headers, body = get("/css/app.css")
    assert_equal 200, status
    assert_equal "text/css", headers["content-type"]
    assert_equal "7", headers["content-length"]
    assert_equal File.mtime(File.join(@root, "css", "app.css")).httpdate, headers["last-modified"]
    assert_match(/\A"\h+-7"\z/, headers["etag"])
    assert_equal ["body{}\n"], body.to_a
  end

  def test_head_is_answered_too
    assert_equal 200, get("/hello.txt", "HEAD").first
  end

  def test_what_is_not_a_file_here_goes_to_the_app
    [
      get("/hello.txt", "POST"), get("/missing.txt"), get("/css"), get("/"), get(""),
      get("/.env"), get("/css/../hello.txt"), get("/%2e%2e/outside.txt"), get("/../outside.txt"),
      get("/hello.txt%00"), get("/%ff.txt"), get("hello.txt")
    ].each { |response| assert_nil response }
  end

  def test_a_symlink_out_of_the_root_is_not_followed
    File.symlink(File.join(@dir, "outside.txt"), File.join(@root, "link.txt"))
    assert_nil get("/link.txt")
  end

  def test_a_symlink_inside_the_root_is_served
    File.symlink(File.join(@root, "hello.txt"), File.join(@root, "alias.txt"))
    assert_equal ["hello\n"], get("/alias.txt")[2].to_a
  end

  def test_percent_encoded_paths_are_decoded
    assert_equal ["accent\n"], get("/caf%C3%A9.txt")[2].to_a
    assert_equal ["hello\n"], get("//hello%2Etxt")[2].to_a
  end

  def test_a_changed_file_is_read_again
    assert_equal ["hello\n"], get("/hello.txt")[2].to_a
    path = File.join(@root, "hello.txt")
    File.write(path, "hello again\n")
    File.utime(Time.now + 5, Time.now + 5, path)
    _, headers, body = get("/hello.txt")
    assert_equal ["hello again\n"], body.to_a
    assert_equal "12", headers["content-length"]
  end

  def test_a_large_file_is_sent_from_disk
    big = "x" * (Spindle::StaticFiles::SMALL + 1)
    File.write(File.join(@root, "big.bin"), big)
    _, headers, body = get("/big.bin")
    assert_equal File.join(File.realpath(@root), "big.bin"), body.to_path
    assert_equal "application/octet-stream", headers["content-type"]
    assert_equal big, body.to_enum(:each).to_a.join
  end

  def test_unchanged_files_are_answered_304
    _, headers, = get("/hello.txt")
    etag = headers["etag"]
    assert_equal 304, get("/hello.txt", HTTP_IF_NONE_MATCH: etag).first
    assert_equal 304, get("/hello.txt", HTTP_IF_NONE_MATCH: %(W/"nope", W/#{etag})).first
    assert_equal 304, get("/hello.txt", HTTP_IF_MODIFIED_SINCE: headers["last-modified"]).first
    assert_equal 200, get("/hello.txt", HTTP_IF_NONE_MATCH: %("nope")).first
    assert_equal 200, get("/hello.txt", HTTP_IF_MODIFIED_SINCE: (Time.now - 3600).httpdate).first
    assert_equal 200, get("/hello.txt", HTTP_IF_MODIFIED_SINCE: "yesterday").first
    # If-None-Match decides when both are sent.
    assert_equal 200, get("/hello.txt", HTTP_IF_NONE_MATCH: %("nope"),
                                        HTTP_IF_MODIFIED_SINCE: headers["last-modified"]).first
  end

  def test_the_option_needs_an_existing_directory
    relative = Pathname(@root).relative_path_from(Pathname(Dir.pwd)).to_s
    assert_equal @root, Config::Coerce.directory(relative, "static")
    error = assert_raises(Config::Error) { Config::Coerce.directory(File.join(@dir, "outside.txt"), "static") }
    assert_match(/static must be an existing directory/, error.message)
  end
end
