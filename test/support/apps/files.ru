# frozen_string_literal: true

require "rack/files"

# File bodies (bodies with #to_path) for the static-file tests, from the
# directory SPINDLE_TEST_FILES names. GET /files/NAME: Rack::Files (declared
# content-length, ranges, HEAD, 304); /undeclared/NAME: a to_path body with
# no content-length (as Rails' send_file returns); /declared/NAME?length=N:
# a to_path body that declares N bytes, whatever the file holds; /count: the
# number of /count requests so far, this one included (the order the app
# saw them in); /count?pause=MS first sleeps MS milliseconds (app work).
ROOT = ENV.fetch("SPINDLE_TEST_FILES")
FILES = Rack::Files.new(ROOT)
COUNT_LOCK = Mutex.new
count = 0

# A file body the way Rails' send_file makes one: #each and #to_path.
PathBody = Struct.new(:to_path) do
  def each
    File.open(to_path, "rb") { |file| yield file.read(16_384) until file.eof? }
  end
end

run lambda { |env|
  path = env["PATH_INFO"]
  case path
  when "/count"
    pause = env["QUERY_STRING"][/pause=(\d+)/, 1]
    sleep(Integer(pause) / 1000.0) if pause
    n = COUNT_LOCK.synchronize { count += 1 }
    [200, { "content-type" => "text/plain" }, [n.to_s]]
  when %r{\A/files(/.+)\z}
    FILES.call(env.merge("PATH_INFO" => Regexp.last_match(1)))
  when %r{\A/undeclared/([\w.]+)\z}
    [200, { "content-type" => "application/octet-stream" }, PathBody.new(File.join(ROOT, Regexp.last_match(1)))]
  when %r{\A/declared/([\w.]+)\z}
    file = File.join(ROOT, Regexp.last_match(1))
    length = env["QUERY_STRING"][/length=(\d+)/, 1]
    [200, { "content-type" => "application/octet-stream", "content-length" => length }, PathBody.new(file)]
  else [404, { "content-type" => "text/plain" }, ["not found\n"]]
  end
}
