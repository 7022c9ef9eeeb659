# frozen_string_literal: true

require "socket"
require "tmpdir"
require "fileutils"
require_relative "waiting"
require_relative "free_port"

# A real nginx or HAProxy on loopback in front of a test's bin/spindle, from a
# config written into a fresh directory: the proxy in front of the server
# exactly as an operator runs it, minus the rest of a machine. Each runs in
# the foreground in its own process group; #stop kills the group and removes
# the directory. Loopback only.
class ProxyServer
  include Waiting
  include FreePort

  START_DEADLINE = 15

  attr_reader :port, :dir

  def self.available?(binary) = File.executable?(binary)

  # Yields the directory and a free loopback port; the block returns the config text.
  def initialize
    @dir = Dir.mktmpdir("spindle-proxy")
    @port = free_port
    File.write(config_path, yield(@dir, @port))
  end

  def start
    @log = File.join(@dir, "proxy.log")
    @pid = Process.spawn(*command, in: File::NULL, out: @log, err: %i[child out], pgroup: true)
    wait_until("#{self.class.name} listening on 127.0.0.1:#{@port}", deadline: START_DEADLINE) do
      raise "#{self.class.name} exited at start:\n#{output}" if Process.waitpid(@pid, Process::WNOHANG)

      listening?
    end
    self
  end

  def output
    File.exist?(@log.to_s) ? File.read(@log) : ""
  end

  def stop
    if @pid
      begin
        Process.kill(:KILL, -@pid)
        Process.wait(@pid)
      rescue Errno::ESRCH, Errno::ECHILD
        nil
      end
    end
    FileUtils.rm_rf(@dir)
  end

  private

  def config_path = File.join(@dir, "proxy.conf")

  def listening?
    TCPSocket.new("127.0.0.1", @port).close
    true
  rescue SystemCallError
    false
  end


  # Minitest's flunk, for Waiting#wait_until outside a test.
  def flunk(message) = raise(message)
end

# nginx in one process (master_process off: no workers, no user switch),
# logging to its directory, never daemonised.
class NginxServer < ProxyServer
  BINARY = "/usr/sbin/nginx"

  # locations: the body of the server block.
  def self.config(dir, port, locations)
    temp = %w[client_body proxy fastcgi uwsgi scgi].map { |kind| "#{kind}_temp_path #{dir}/#{kind};" }.join("\n  ")
    <<~CONF
      daemon off;
      master_process off;
      pid #{dir}/nginx.pid;
      error_log #{dir}/error.log warn;
      events { worker_connections 128; }
      http {
        access_log off;
        #{temp}
        server {
          listen 127.0.0.1:#{port};
          #{locations}
        }
      }
    CONF
  end

  def command = [BINARY, "-p", @dir, "-e", File.join(@dir, "error.log"), "-c", config_path]

  def output = [super, (File.read(File.join(@dir, "error.log")) rescue "")].join
end

# HAProxy in the foreground (-db), one process.
class HaproxyServer < ProxyServer
  BINARY = "/usr/sbin/haproxy"

  # server_line: the backend's server line (address and options such as
  # send-proxy-v2); backend: more lines for the backend (option httpchk...);
  # stats: a unix socket path for HAProxy's runtime API (#server_status).
  def self.config(port, server_line, backend: [], stats: nil)
    <<~CONF
      global
        log stderr format raw local0 warning
        #{"stats socket #{stats} level admin" if stats}
      defaults
        mode http
        log global
        timeout connect 5s
        timeout client 30s
        timeout server 30s
      frontend front
        bind 127.0.0.1:#{port}
        default_backend spindles
      backend spindles
        #{[*backend, server_line].join("\n  ")}
    CONF
  end

  # What HAProxy's runtime API says of a server's health ("UP", "DOWN",
  # "UP 1/2"...), from `show stat` on the stats socket.
  def self.server_status(stats, server = "s1")
    csv = UNIXSocket.open(stats) do |socket|
      socket.write("show stat\n")
      socket.read
    end
    line = csv.lines.find { |l| l.split(",")[1] == server }
    line&.split(",")&.fetch(17)
  rescue SystemCallError
    nil
  end

  def command = [BINARY, "-db", "-f", config_path]
end
