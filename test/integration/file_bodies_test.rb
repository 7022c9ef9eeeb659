# frozen_string_literal: true

require "digest"
require "tmpdir"
require_relative "../support/spindle_process"

# File bodies (Rack bodies with #to_path: Rack::Files, Rails' send_file) go
# out with sendfile(2) from the file, and the part a slow reader has not
# taken waits as the open file, not as bytes and not in a thread
# (docs/SECURITY.md, "Slow readers"). On every engine: the body arrives
# byte-identical with keep-alive after it; HEAD and 304 send no body; ranges
# stay Rack::Files' business; a slow reader of a big file holds neither the
# only pool thread (or the blocking engine's one thread) nor the file's size
# in memory; a file that ends before its content-length closes the
# connection instead of framing the next response wrongly.
class FileBodiesTest < SpindleIntegrationTest
  MIB = 1024 * 1024
  BIG = 32 * MIB # larger than what loopback socket buffers take (about 3 MiB)
  RECEIVE_WINDOW = 4096
  # One thread (or one loop) where the engine has a setting: a slow reader
  # that held it would leave nothing to serve anyone else.
  ENGINES = { "blocking" => [], "threads" => ["-t", "1:1"], "fibers" => [], "hybrid" => ["--loops", "1"] }.freeze

  def setup
    @dir = Dir.mktmpdir("spindle-files")
    @big = write_file("big.bin", BIG)
    @medium = write_file("medium.bin", MIB + 17)
    @small = write_file("small.txt", 1000)
  end

  def teardown
    FileUtils.rm_rf(@dir)
  end

  ENGINES.each do |engine, extra|
    define_method("test_file_bodies_arrive_whole_with_keep_alive_with_#{engine}") do
      client = connect(start_server(engine, extra))
      [["/files/big.bin", @big], ["/files/medium.bin", @medium], ["/files/small.txt", @small],
       ["/undeclared/medium.bin", @medium], ["/undeclared/big.bin", @big]].each do |path, bytes|
        response = get(client, path)
        assert_equal 200, response.status, path
        assert_equal bytes.bytesize.to_s, response["content-length"], path
        assert_equal Digest::SHA256.hexdigest(bytes), Digest::SHA256.hexdigest(response.body), path
        refute response.close?, "#{path}: the connection should stay open"
      end
    end

    define_method("test_head_304_and_ranges_of_file_bodies_with_#{engine}") do
      client = connect(start_server(engine, extra))
      head = client.write(request("HEAD", "/files/big.bin")).read_response(head: true, deadline: 30)
      assert_equal [200, BIG.to_s], [head.status, head["content-length"]]
      modified = head["last-modified"]

      unchanged = get(client, "/files/big.bin", [["If-Modified-Since", modified]])
      assert_equal [304, ""], [unchanged.status, unchanged.body]

      range = get(client, "/files/big.bin", [["Range", "bytes=1000-1999"]])
      assert_equal [206, @big.byteslice(1000, 1000)], [range.status, range.body]
      # Nothing stray was sent after the bodiless responses: the next response parses.
      assert_equal @small, get(client, "/files/small.txt").body
    end

    define_method("test_a_slow_reader_of_a_big_file_holds_no_thread_nor_its_size_with_#{engine}") do
      app = start_server(engine, extra)
      before = memory(app, "VmRSS")
      reader = slow_reader(app, "/files/big.bin")
      assert reader.socket.wait_readable(HttpClient::DEFAULT_DEADLINE), "the response should start"

      # The server writes the rest as the reader reads: meanwhile it serves others.
      other = HttpClient.connect(app.host, app.port)
      @connections << other
      assert_equal 200, get(other, "/count").status
      growth = memory(app, "VmHWM") - before
      assert_operator growth, :<, BIG / 2, "peak RSS grew by #{growth / MIB} MiB for a #{BIG / MIB} MiB file"

      response = reader.read_response(deadline: 60)
      assert_equal Digest::SHA256.hexdigest(@big), Digest::SHA256.hexdigest(response.body)
      assert_equal @small, get(reader, "/files/small.txt").body, "keep-alive after the file"
    end

    define_method("test_a_file_that_ends_early_closes_the_connection_with_#{engine}") do
      app = start_server(engine, extra)
      reader = slow_reader(app, "/files/big.bin")
      assert reader.socket.wait_readable(HttpClient::DEFAULT_DEADLINE), "the response should start"
      File.truncate(File.join(@dir, "big.bin"), 4 * MIB) # while it is being sent

      received = reader.read_until_eof(deadline: 60)
      body = received.byteslice(received.index("\r\n\r\n") + 4..)
      assert_operator body.bytesize, :<, BIG, "the server must not pretend the body was whole"
      assert_equal @big.byteslice(0, body.bytesize), body, "what was sent is the file's bytes"

      # Declared longer than the file from the start: the same.
      client = connect(app)
      client.write(request("GET", "/declared/medium.bin?length=#{2 * MIB}"))
      received = client.read_until_eof(deadline: 30)
      assert_operator received.bytesize, :<, 2 * MIB
      assert_includes received, "content-length: #{2 * MIB}"
    end
  end

  private

  def start_server(engine, extra)
    spawn_server("--engine", engine, *extra, "--write-timeout", "60", "-b", LOOPBACK,
                 app_path("files"), env: { "SPINDLE_TEST_FILES" => @dir })
  end

  def write_file(name, size)
    bytes = Random.new(size).bytes(size)
    File.binwrite(File.join(@dir, name), bytes)
    bytes
  end

  def get(client, path, headers = [])
    client.write(request("GET", path, headers)).read_response(deadline: 30)
  end

  # A client that asks for path through a small receive window and reads
  # nothing yet.
  def slow_reader(app, path)
    socket = Socket.new(:INET, :STREAM)
    socket.setsockopt(:SOCKET, :RCVBUF, RECEIVE_WINDOW)
    socket.connect(Socket.sockaddr_in(app.port, app.host))
    client = HttpClient::Connection.new(socket)
    @connections << client
    client.write(request("GET", path))
  end

  # A /proc/PID/status figure in bytes (VmRSS now, VmHWM its peak).
  def memory(app, field)
    Integer(File.read("/proc/#{app.pid}/status")[/^#{field}:\s+(\d+) kB/, 1]) * 1024
  end
end
