# frozen_string_literal: true

require "fileutils"
require "json"
require "open3"
require "rbconfig"
require "securerandom"
require "tmpdir"
require_relative "topology/netns"
require_relative "topology/lb_config"
require_relative "topology/processes"
require_relative "topology/load"

# Several "hosts" behind a load balancer, on one machine (issue 15).
#
# Network namespaces stand in for machines: a switch namespace holding a
# bridge, and one namespace per role (the load balancer, the client, each
# host), each wired to the bridge by a veth pair created inside the
# namespaces, so nothing is added to the machine's own network and no packet
# leaves the namespaces this run created. Each host runs `bin/spindle -w 2`
# (or any command) in its namespace; the load balancer runs nginx or HAProxy
# from the very files in docs/deploy/.
#
# Names carry a prefix, the creating process's pid and a random part, so two
# runs never collide, and a run that was killed (its pid gone) is swept by the
# next one. #teardown kills every process left in the namespaces and deletes
# them; callers run it in an ensure.
#
# Used by test/topology/*, bin/topology (by hand) and bench/scenarios/scale.rb.
# No minitest here: the bench and the script load it too.
class Topology
  ROOT = File.expand_path("../..", __dir__)
  SPINDLE = File.join(ROOT, "bin", "spindle")
  SUBNET = "10.77.0" # private to this run's bridge: no other run can see it
  ADDRESSES = { lb: 2, client: 3 }.freeze
  HOST_BASE = 10 # h1 is .11, h2 .12, ...
  PORT = 9292     # each host's bind
  LB_PORT = 8080  # the load balancer's listener

  class Error < StandardError; end

  attr_reader :dir, :hosts, :netns

  # hosts: how many host namespaces (h1..hN).
  def initialize(hosts: 3, dir: nil)
    Netns.sweep_stale
    Topology.sweep_stale_dirs
    @netns = Netns.new
    @dir = dir || Dir.mktmpdir("spindle-topology")
    @hosts = (1..hosts).map { |i| :"h#{i}" }
    @processes = Processes.new(@dir)
    @netns.build([:lb, :client, *@hosts].to_h { |role| [role, address(role)] })
  rescue StandardError
    teardown
    raise
  end

  # Runs a block with a fresh topology, torn down afterwards whatever happens.
  def self.open(**options)
    topology = new(**options)
    yield topology
  ensure
    topology&.teardown
  end

  def address(role)
    index = ADDRESSES[role] || (HOST_BASE + Integer(role.to_s.delete_prefix("h")))
    "#{SUBNET}.#{index}"
  end

  def host_url(role) = "http://#{address(role)}:#{PORT}"

  def lb_url = "http://#{address(:lb)}:#{LB_PORT}"

  def control_path(role) = File.join(@dir, "#{role}.control.sock")

  # argv that runs command inside role's namespace (nsenter execs it, so a
  # spawned pid is the command's own).
  def in(role, *command) = [*Netns.enter(@netns.name(role)), *command.map(&:to_s)]

  # Starts bin/spindle (a cluster with a control socket) in each host's
  # namespace, all at once, and waits until each answers there. env: a Hash,
  # or a lambda from the role to one. Returns { role => process }.
  def start_spindles(app, *args, roles: @hosts, workers: 2, env: {}, chdir: ROOT)
    started = roles.to_h do |role|
      argv = self.in(role, RbConfig.ruby, SPINDLE, "-w", workers, "-b", "tcp://#{address(role)}:#{PORT}",
                     "--control", "unix://#{control_path(role)}", *args, app)
      [role, @processes.spawn(role, argv, env: env.respond_to?(:call) ? env.call(role) : env, chdir: chdir)]
    end
    started.each { |role, process| wait_for_http(role, "#{host_url(role)}/", process: process) }
  end

  # Load through url (default: the load balancer) from the client namespace.
  def start_load(url = lb_url, **options) = Load.new(self, url, **options)

  # Any other server command in a host's namespace (a Puma host for the
  # bench): the command must listen on host_url(role).
  def start_host_command(role, command, env: {}, chdir: ROOT, ready_path: "/")
    process = @processes.spawn(role, self.in(role, *command), env: env, chdir: chdir)
    wait_for_http(role, "#{host_url(role)}#{ready_path}", process: process)
    process
  end

  # Starts nginx or HAProxy (kind: :nginx, :haproxy) in the lb namespace from
  # docs/deploy/ with the given hosts (default: all), and waits until a
  # request through it is answered by a host.
  def start_lb(kind, hosts: @hosts, path: "/", config: nil)
    config ||= LbConfig.new(kind, listen: "#{address(:lb)}:#{LB_PORT}",
                                  hosts: hosts.map { |h| [h.to_s, "#{address(h)}:#{PORT}"] }, dir: @dir)
    process = @processes.spawn(:"lb-#{kind}", self.in(:lb, *config.command), env: {})
    @lb_config = config
    @lb_process = process
    wait_for_http(:client, "#{lb_url}#{path}", process: process)
    process
  end

  def lb_config = @lb_config

  # Stops the load balancer (to start another, or the same with other hosts).
  def stop_lb = stop(@lb_process)

  # TERM to a process's group, KILL past the deadline; waits for the exit.
  def stop(process, deadline: Processes::STOP_DEADLINE)
    return unless process&.alive?

    process.signal(:TERM)
    return if process.wait(deadline)

    process.signal(:KILL)
    process.wait(5)
  end

  # HAProxy's runtime API (the admin socket in its config): one command, its answer.
  def haproxy_command(line) = LbConfig.haproxy_command(@lb_config.admin_socket, line)

  # Runs a command inside a namespace to its end: [stdout, stderr, status].
  def run(role, *command, timeout: 60)
    Processes.capture(self.in(role, *command), timeout: timeout)
  end

  # curl from inside a namespace: [status code (0: no answer), body].
  def curl(role, url, timeout: 5)
    out, _err, _status = run(role, "curl", "-s", "-m", timeout, "-o", "-", "-w", "\n%{http_code}", url,
                             timeout: timeout + 5)
    body, _, code = out.rpartition("\n")
    [code.to_i, body]
  end

  # Waits until url answers 200 from inside role's namespace; raises with
  # the process's log if it exits first or the deadline passes.
  def wait_for_http(role, url, process: nil, deadline: 90)
    limit = Processes.now + deadline
    loop do
      return true if curl(role, url, timeout: 2).first == 200
      raise Error, "#{process.name} exited (#{process.status.inspect}):\n#{process.log_tail}" if process && !process.alive?
      raise Error, "#{url} did not answer 200 within #{deadline}s#{process && ":\n#{process.log_tail}"}" if Processes.now > limit

      sleep 0.2
    end
  end

  # The load balancer's TCP connections to a host that are open (established,
  # or closed by the host and not yet by the balancer): their local ports.
  # Read from /proc/PID/net/tcp of the balancer's process, which shows its
  # namespace's table, in microseconds and without starting a process.
  def lb_connections_to(role)
    remote = format("%08X:%04X", address(role).split(".").map(&:to_i).reverse.inject(0) { |a, b| (a << 8) | b }, PORT)
    File.readlines("/proc/#{@lb_process.pid}/net/tcp").drop(1).filter_map do |line|
      _, local, peer, state = line.split
      local.split(":").last.to_i(16) if peer == remote && %w[01 08].include?(state) # ESTABLISHED, CLOSE_WAIT
    end
  end

  # A host's TCP counts, from its namespace's kernel (no process of the
  # host needed, so also after it died): connections open to its port from
  # the load balancer, and passive opens (every connection the kernel ever
  # accepted there, into the app or only into the listen backlog).
  def host_tcp(role)
    out, = run(role, "cat", "/proc/net/tcp", "/proc/net/snmp", timeout: 10)
    lb = format("%08X", address(:lb).split(".").map(&:to_i).reverse.inject(0) { |a, b| (a << 8) | b })
    open = out.lines.count do |line|
      _, local, peer, state = line.split
      local&.end_with?(format(":%04X", PORT)) && peer&.start_with?("#{lb}:") && %w[01 08].include?(state)
    end
    header, values = out.lines.select { |l| l.start_with?("Tcp:") }
    { open: open, passive_opens: header.split.zip(values.split).to_h.fetch("PassiveOpens").to_i }
  end

  # A host's machine dies: KILL to every process in its namespace at once
  # (the pids are listed first, so the signals go out back to back), then
  # wait until none runs. Returns [when the first signal went, when the
  # last process was dead] (CLOCK_MONOTONIC).
  def kill_host(role)
    pids = Netns.pids(@netns.name(role))
    start = Processes.now
    pids.each { |pid| Processes.kill(pid) }
    limit = start + 30
    sleep 0.005 until pids.none? { |pid| Processes.running?(pid) } || Processes.now > limit
    [start, Processes.now]
  end

  def processes = @processes

  # The ERROR lines (and the backtraces under them) of every host's log: a
  # failed request's server-side cause, for failure messages.
  def host_errors(limit = 60)
    Dir[File.join(@dir, "h*.log")].sort.flat_map do |log|
      keep = false
      File.readlines(log).select { |line| keep = line.include?(" ERROR ") || (keep && line.start_with?(" ")) }
                         .map { |line| "#{File.basename(log)}: #{line}" }
    end.first(limit).join
  end

  # Kills whatever runs in the namespaces, deletes them and the run
  # directory (kept when SPINDLE_TOPOLOGY_KEEP is set, for a post-mortem).
  def teardown
    @processes&.stop_all
    @netns&.teardown
    FileUtils.rm_rf(@dir) if @dir && ENV["SPINDLE_TOPOLOGY_KEEP"].to_s.empty?
  end

  # Run directories (Dir.mktmpdir names them with the creating pid) of runs
  # killed before their teardown.
  def self.sweep_stale_dirs
    Dir[File.join(Dir.tmpdir, "spindle-topology*")].each do |dir|
      pid = File.basename(dir)[/\Aspindle-topology\d+-(\d+)-/, 1]&.to_i
      FileUtils.rm_rf(dir) if pid && !Netns.alive?(pid)
    end
  end

  # Why namespaces cannot be used here, or nil when they can: the tests skip
  # with this reason (not root, no `ip`, a kernel or chroot without them).
  def self.unavailable_reason
    return "needs root for ip netns (uid #{Process.uid})" unless Process.uid.zero?
    return "needs iproute2's ip" unless system("ip", "-V", out: File::NULL, err: File::NULL)

    Netns.probe
  end
end
