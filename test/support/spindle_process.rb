# frozen_string_literal: true

require "minitest/autorun"
require "rbconfig"
require "socket"
require "timeout"
require "tmpdir"
require "fileutils"
require_relative "http_client"
require_relative "waiting"
require_relative "free_port"

# One real `bin/spindle` process, started the way an operator starts it.
#
# Its stdout and stderr are drained by reader threads from the moment it is
# spawned (a server blocked on a full pipe would look like a hung server), and
# every wait is a condition with a deadline. The process gets its own process
# group so that kill! also reaches anything it forked. Every instance is
# registered and killed at exit, so a failing or interrupted test never leaves
# a server behind.
class SpindleProcess
  ROOT = File.expand_path("../..", __dir__)
  BIN = File.join(ROOT, "bin", "spindle")

  # `spindle 0.1.0 engine=threads threads=0:5 binds=tcp://127.0.0.1:40123,unix:///tmp/s.sock pid=1234 ...`
  # after the log's prefix (`2026-11-23T05:37:41.123Z 1234 [single] INFO `, or
  # a JSON line's fields up to "message"); the match starts at "spindle" (\K).
  # Only a whole line counts: a pipe read can end in the middle of the binds.
  START_LINE = /^(?:\S+ \d+ \[[^\]]*\] [A-Z]+ |\{.*"message":")?\Kspindle \S+ .*\bbinds=(\S+).*\n/

  # Bounds on hangs, not performance thresholds. The first start of a fresh
  # checkout installs gems and compiles the extension, hence the generous start.
  START_DEADLINE = Float(ENV.fetch("SPINDLE_TEST_START_DEADLINE", "45"))
  STOP_DEADLINE = 15
  EXIT_DEADLINE = 30

  class StartError < StandardError; end

  # A bound address from the start-up line.
  Bind = Struct.new(:uri, :scheme, :host, :port, :path, keyword_init: true) do
    def tcp?
      scheme == "tcp"
    end

    def url
      url_host = host.include?(":") ? "[#{host}]" : host
      "http://#{url_host}:#{port}"
    end
  end

  @live = []
  @live_lock = Mutex.new

  class << self
    # Starts a server and waits for its start-up line (start_deadline: a
    # Rails app's boot takes longer than START_DEADLINE allows on a busy
    # machine).
    def start(*args, start_deadline: START_DEADLINE, **options)
      process = new(args, **options)
      process.wait_for_start(start_deadline)
      process
    rescue StandardError
      process&.kill!
      raise
    end

    # Runs a command that is expected to exit by itself (-v, -h, errors) and
    # returns the finished process, or one killed at the deadline.
    def run(*args, deadline: EXIT_DEADLINE, **options)
      process = new(args, **options)
      process.kill! unless process.wait_for_exit(deadline)
      process
    end

    def register(process)
      @live_lock.synchronize { @live << process }
    end

    def unregister(process)
      @live_lock.synchronize { @live.delete(process) }
    end

    def kill_all
      @live_lock.synchronize { @live.dup }.each(&:kill!)
    end

    def parse_bind(uri)
      case uri
      when %r{\Atcp://\[([^\]]+)\]:(\d+)\z}, %r{\Atcp://([^:/\[\]]+):(\d+)\z}
        Bind.new(uri: uri, scheme: "tcp", host: Regexp.last_match(1), port: Integer(Regexp.last_match(2)))
      when %r{\Aunix://(.+)\z}
        Bind.new(uri: uri, scheme: "unix", path: Regexp.last_match(1))
      else
        raise StartError, "cannot parse bind #{uri.inspect} from the start-up line"
      end
    end
  end

  # after_run, not at_exit: minitest/autorun runs the tests from an at_exit
  # hook registered before this file's, and hooks run in reverse order.
  Minitest.after_run { SpindleProcess.kill_all }

  attr_reader :pid, :args, :binds, :start_line

  # spawn_options go to Process.spawn as they are (e.g. rlimit_nofile: [64, 64]).
  def initialize(args, chdir: ROOT, env: {}, **spawn_options)
    @spawn_options = spawn_options
    @args = args.map(&:to_s)
    @lock = Mutex.new
    @changed = ConditionVariable.new
    @stdout = String.new(encoding: Encoding::BINARY)
    @stderr = String.new(encoding: Encoding::BINARY)
    @output = String.new(encoding: Encoding::BINARY)
    @status = nil
    @binds = []
    spawn(chdir, env)
  end

  # Waits for the start-up line; raises StartError (with everything the
  # process printed) if it exits first or says nothing within the deadline.
  def wait_for_start(deadline = START_DEADLINE)
    outcome = wait_for_state(deadline) { start_line_match || (@status && :exited) }
    case outcome
    when MatchData
      @start_line = outcome[0].chomp
      @binds = outcome[1].split(",").map { |uri| self.class.parse_bind(uri) }
      refuse_without_yjit
      self
    when :exited
      raise StartError, "bin/spindle #{@args.join(' ')} exited (#{@status.inspect}) before its start-up line:\n#{output}"
    else
      kill!
      raise StartError, "bin/spindle #{@args.join(' ')} printed no start-up line within #{deadline}s:\n#{output}"
    end
  end

  # A lane that runs the suite with YJIT on (SPINDLE_TEST_YJIT=1 beside
  # RUBY_YJIT_ENABLE=1, bin/test-ruby3.4) means every server: one started
  # without it (an environment a test built lost the variable) fails its test.
  def refuse_without_yjit
    return unless ENV["SPINDLE_TEST_YJIT"] == "1" && @start_line.match?(/ yjit=off( |\z)/)

    kill!
    raise StartError, "started without YJIT in a lane that runs every server with it (SPINDLE_TEST_YJIT=1):\n#{output}"
  end

  def tcp_bind
    @binds.find(&:tcp?) or raise StartError, "no tcp bind in #{@start_line.inspect}"
  end

  def url
    tcp_bind.url
  end

  def host
    tcp_bind.host
  end

  def port
    tcp_bind.port
  end

  # A raw connection to a bind (the first one unless told).
  def connect(bind = @binds.first)
    bind.tcp? ? HttpClient.connect(bind.host, bind.port) : HttpClient.connect_unix(bind.path)
  end

  def stdout
    @lock.synchronize { text(@stdout) }
  end

  def stderr
    @lock.synchronize { text(@stderr) }
  end

  # Everything the process printed so far, stdout and stderr in arrival order.
  def output
    @lock.synchronize { text(@output) }
  end

  # Waits until the output matches +pattern+; returns the MatchData or nil.
  def wait_for_output(pattern, deadline: HttpClient::DEFAULT_DEADLINE)
    wait_for_state(deadline) { pattern.match(text(@output)) }
  end

  def alive?
    @lock.synchronize { @status.nil? }
  end

  def status
    @lock.synchronize { @status }
  end

  def signal(name)
    Process.kill(name, @pid)
  rescue Errno::ESRCH
    nil
  end

  # Sends +signal+ and waits for the exit. Returns the Process::Status, or nil
  # when the process had to be killed because it outlived the deadline.
  def stop(signal = :TERM, deadline: STOP_DEADLINE)
    signal(signal)
    status = wait_for_exit(deadline)
    kill! unless status
    status
  end

  # Waits for the process to exit and for its output to be drained; returns
  # the Process::Status, or nil if it is still running at the deadline.
  def wait_for_exit(deadline = EXIT_DEADLINE)
    limit = clock + deadline
    status = wait_for_state(deadline) { @status }
    return nil unless status

    # Output written just before exit is still in the pipes; take all of it.
    @readers.each { |reader| reader.join([limit - clock, 1].max) }
    status
  end

  # Kills the whole process group (the server and anything it forked).
  def kill!
    [-@pid, @pid].each do |target|
      Process.kill(:KILL, target)
    rescue Errno::ESRCH, Errno::EPERM
      next
    end
    @waiter.join(STOP_DEADLINE)
    @readers.each { |reader| reader.join(1) }
    self.class.unregister(self)
  end

  def inspect
    "#<SpindleProcess pid=#{@pid} args=#{@args.inspect} status=#{status.inspect}>"
  end

  private

  # What is run: this checkout's bin/spindle (CommandProcess runs another).
  def command = [RbConfig.ruby, BIN]

  def spawn(chdir, env)
    out_read, out_write = IO.pipe
    err_read, err_write = IO.pipe
    @pid = Process.spawn(env, *command, *@args, chdir: chdir, in: File::NULL, out: out_write,
                                                err: err_write, pgroup: true, **@spawn_options)
    out_write.close
    err_write.close
    self.class.register(self)
    @readers = [drain(out_read, @stdout), drain(err_read, @stderr)]
    @waiter = Thread.new { reap }
  end

  def drain(pipe, stream)
    Thread.new do
      loop do
        data = pipe.readpartial(64 * 1024)
        @lock.synchronize do
          stream << data
          @output << data
          @changed.broadcast
        end
      end
    rescue EOFError, IOError
      pipe.close
    end
  end

  def reap
    _, status = Process.wait2(@pid)
    @lock.synchronize do
      @status = status
      @changed.broadcast
    end
    self.class.unregister(self) if status
  end

  def start_line_match
    START_LINE.match(text(@stdout))
  end

  # Blocks on the condition variable until the block returns a truthy value
  # or the deadline passes (then returns nil). Every state change signals it.
  # The block runs with @lock held.
  def wait_for_state(deadline)
    limit = clock + deadline
    @lock.synchronize do
      loop do
        result = yield
        return result if result

        remaining = limit - clock
        return nil if remaining <= 0

        @changed.wait(@lock, remaining)
      end
    end
  end

  # Callers hold @lock (the reader threads append to these buffers).
  def text(bytes)
    bytes.dup.force_encoding(Encoding::UTF_8).scrub
  end

  def clock
    Process.clock_gettime(Process::CLOCK_MONOTONIC)
  end
end

# A rendezvous between a test and an app running inside the server, over a
# UNIX socket the test listens on. The app connects, says where it is
# ("entered", "closed", ...) and, when asked to, blocks until the test lets it
# go. This orders events without any sleep: the test knows the app is inside
# the request because the app told it so. If the test goes away the socket
# closes and the app carries on, so a failing test never wedges the server.
class Rendezvous
  # One arrival of the app at the rendezvous.
  class Visit
    attr_reader :message

    def initialize(socket, message)
      @socket = socket
      @message = message
    end

    # Lets a waiting app continue.
    def release
      @socket.write("go\r\n")
    rescue Errno::EPIPE, Errno::ECONNRESET, IOError
      nil
    ensure
      @socket.close unless @socket.closed?
    end

    def close
      @socket.close unless @socket.closed?
    end
  end

  attr_reader :path

  def initialize
    @dir = Dir.mktmpdir("spr")
    @path = File.join(@dir, "r.sock")
    @server = UNIXServer.new(@path)
    @visits = []
  end

  # Waits for the next arrival and checks it says +message+.
  def await(message, deadline: HttpClient::DEFAULT_DEADLINE)
    visit = await_any(deadline: deadline, expecting: message)
    return visit if visit.message == message

    raise HttpClient::ProtocolError, "expected #{message.inspect} at the rendezvous, got #{visit.message.inspect}"
  end

  # Waits for the next arrival, whatever it says.
  def await_any(deadline: HttpClient::DEFAULT_DEADLINE, expecting: "anything")
    limit = clock + deadline
    unless @server.wait_readable(deadline)
      raise HttpClient::Timeout, "the app did not reach the rendezvous (#{expecting.inspect}) within #{deadline}s"
    end

    socket = @server.accept
    visit = Visit.new(socket, read_line(socket, limit))
    @visits << visit
    visit
  end

  def close
    @visits.each(&:close)
    @server.close unless @server.closed?
    FileUtils.rm_rf(@dir)
  end

  private

  def read_line(socket, limit)
    line = +""
    until line.end_with?("\r\n")
      remaining = limit - clock
      raise HttpClient::Timeout, "the app said nothing at the rendezvous" if remaining <= 0 || !socket.wait_readable(remaining)

      data = socket.read_nonblock(1024, exception: false)
      raise HttpClient::ProtocolError, "the app left the rendezvous after #{line.inspect}" if data.nil?

      line << data unless data == :wait_readable
    end
    line.chomp
  end

  def clock
    Process.clock_gettime(Process::CLOCK_MONOTONIC)
  end
end

# Base class for tests that talk to a real `bin/spindle` over real sockets.
#
# - Each phase (setup, test, teardown) runs under a timeout, so a hang fails
#   the test instead of blocking the suite.
# - A class can share one server across its tests (`serve_with`); it is
#   started on first use, restarted if a test killed it, and stopped at exit.
#   A test during which the shared server died fails in its teardown.
# - Connections, rendezvous and servers a test opens are closed and killed
#   after it, whatever happened.
class SpindleIntegrationTest < Minitest::Test
  include Waiting
  include FreePort

  PHASE_TIMEOUT = Float(ENV.fetch("SPINDLE_TEST_TIMEOUT", "60"))
  APPS = File.join(SpindleProcess::ROOT, "test", "support", "apps")
  LOOPBACK = "tcp://127.0.0.1:0"

  class PhaseTimeout < StandardError; end

  class << self
    # Declares the arguments of the server the tests of this class share.
    def serve_with(*args)
      @server_args = args
    end

    def server_args
      @server_args || (superclass.respond_to?(:server_args) ? superclass.server_args : nil)
    end

    def shared_server
      @shared_server = nil if @shared_server && !@shared_server.alive?
      @shared_server ||= SpindleProcess.start(*server_args)
    end
  end

  def self.app_path(name)
    File.join(APPS, "#{name}.ru")
  end

  # How long one phase (setup, a test, teardown) may take before it is
  # stopped; a class whose first test boots a large app may allow more.
  def phase_timeout = PHASE_TIMEOUT

  def capture_exceptions
    super do
      Timeout.timeout(phase_timeout, PhaseTimeout, "phase did not finish within #{phase_timeout}s") { yield }
    end
  end

  def before_setup
    super
    @connections = []
    @processes = []
    @rendezvous = []
    @shared = nil
  end

  def after_teardown
    @connections.each(&:close)
    @rendezvous.each(&:close)
    @processes.each(&:kill!)
    if @shared && !@shared.alive?
      flunk "the shared server died during this test (#{@shared.status.inspect}):\n#{@shared.output}"
    end
  ensure
    super
  end

  # The server this class shares.
  def server
    @shared ||= self.class.shared_server
  end

  # A server of this test's own, killed after the test.
  def spawn_server(*args, **options)
    process = SpindleProcess.start(*args, **options)
    @processes << process
    process
  end

  # A process expected to exit by itself (see SpindleProcess.run).
  def run_spindle(*args, **options)
    process = SpindleProcess.run(*args, **options)
    @processes << process
    process
  end

  def connect(process = server, bind = process.binds.first)
    connection = process.connect(bind)
    @connections << connection
    connection
  end

  def rendezvous
    point = Rendezvous.new
    @rendezvous << point
    point
  end

  def app_path(name)
    self.class.app_path(name)
  end

  def request(*args, **options)
    HttpClient.request(*args, **options)
  end

  # One request on a fresh connection, closed once the response is read (so
  # the blocking engine is free for the next connection at once).
  def roundtrip(bytes, process = server, head: false)
    connection = connect(process)
    connection.write(bytes)
    connection.read_response(head: head)
  ensure
    connection&.close
  end

  # Asserts the server answers a plain request on a new connection.
  def assert_still_serving(process = server)
    response = roundtrip(request("GET", "/still-serving", [["Connection", "close"]]), process)
    assert_equal 200, response.status, "the server should still serve new connections:\n#{response}"
  end

  # Whether the app saw a request whose target contains +marker+ (see all.ru).
  def app_saw?(marker, process = server)
    response = roundtrip(request("GET", "/__seen?#{marker}", [["Connection", "close"]]), process)
    assert_equal 200, response.status
    response.body == "yes"
  end

  # Waits for the peer to close; returns what arrived before the close.
  def assert_closed_by_server(connection, message = "the server should close the connection")
    connection.read_until_eof
  rescue HttpClient::Timeout
    flunk message
  end
end
