# frozen_string_literal: true

require "digest"
require "tmpdir"
require_relative "../support/spindle_process"
require_relative "../support/tls_setup"

# File bodies on ssl:// binds: sendfile(2) would put the file's plain bytes
# on a TLS connection, so there a file goes out through the copy fallback
# (HTTP::FileBody#copy, one buffer through the TLS socket). On every engine
# the bodies arrive byte-identical on one kept-alive connection.
class FileBodiesTlsTest < SpindleIntegrationTest
  include TlsClients

  MIB = 1024 * 1024
  ENGINES = { "blocking" => [], "threads" => ["-t", "2:2"], "fibers" => [], "hybrid" => ["--loops", "2"] }.freeze

  def setup
    @files = TlsFiles.new
    @files.server_pair(2)
    @dir = Dir.mktmpdir("spindle-files-tls")
    @big = write_file("big.bin", 8 * MIB + 3)
    @medium = write_file("medium.bin", MIB)
    @small = write_file("small.txt", 1000)
  end

  def teardown
    @files.cleanup
    FileUtils.rm_rf(@dir)
  end

  ENGINES.each do |engine, extra|
    define_method("test_file_bodies_over_tls_with_#{engine}") do
      server = spawn_tls_server("--engine", engine, *extra, "-b", @files.bind, app_path("files"),
                                env: { "SPINDLE_TEST_FILES" => @dir })
      net_http(server.tls_port) do |http|
        http.read_timeout = 60
        [["/files/big.bin", @big], ["/undeclared/medium.bin", @medium], ["/files/small.txt", @small],
         ["/files/big.bin", @big]].each do |path, bytes|
          response = http.get(path)
          assert_equal "200", response.code, path
          assert_equal Digest::SHA256.hexdigest(bytes), Digest::SHA256.hexdigest(response.body), path
        end
      end
      refute_match(/connection failed|Error/, server.output)
    end
  end

  private

  def write_file(name, size)
    bytes = Random.new(size).bytes(size)
    File.binwrite(File.join(@dir, name), bytes)
    bytes
  end
end
