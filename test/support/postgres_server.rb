# frozen_string_literal: true

require "fileutils"
require "tmpdir"
require "etc"

# A private PostgreSQL server for tests and benchmarks: its own data directory,
# listening only on a UNIX socket in a fresh directory, trust authentication,
# stopped at exit. Debian's server binaries are installed by bin/test. As root
# it runs as the postgres user, since PostgreSQL refuses to run as root.
class PostgresServer
  BIN = Dir["/usr/lib/postgresql/*/bin"].max_by { |dir| dir[%r{/(\d+)/bin}, 1].to_i }

  attr_reader :socket_dir

  def self.shared
    @shared ||= new.tap(&:start)
  end

  def initialize(max_connections: 200)
    @max_connections = max_connections
    @root = Dir.mktmpdir("spindle-pg")
    @socket_dir = @root
    @data = File.join(@root, "data")
  end

  def start
    raise "PostgreSQL is not installed (bin/test installs it)" unless BIN

    File.chmod(0o755, @root)
    FileUtils.chown(owner, nil, @root) if root?
    run("initdb", "-D", @data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
    run("pg_ctl", "-D", @data, "-w", "-l", File.join(@root, "server.log"), "-o", server_options, "start")
    at_exit { stop }
    self
  end

  def stop
    return unless File.exist?(File.join(@data, "postmaster.pid"))

    run("pg_ctl", "-D", @data, "-w", "-m", "fast", "stop")
  ensure
    FileUtils.rm_rf(@root)
  end

  # The postmaster's process id (the first line of its pid file).
  def pid = File.foreach(File.join(@data, "postmaster.pid")).first.to_i

  # libpq connection string for clients (the app reads it from DATABASE_URL).
  def url = "postgresql:///postgres?host=#{@socket_dir}&user=postgres"

  private

  def server_options
    "-k #{@socket_dir} -c listen_addresses='' -c max_connections=#{@max_connections} -c fsync=off"
  end

  def root? = Process.uid.zero?

  def owner = root? ? "postgres" : Etc.getpwuid.name

  def run(tool, *args)
    command = [File.join(BIN, tool), *args]
    command = ["runuser", "-u", "postgres", "--", *command] if root?
    output = IO.popen(command, err: [:child, :out], &:read)
    raise "#{tool} failed: #{output}" unless $?.success?
  end
end
