# frozen_string_literal: true

require "json"
require "rbconfig"
require "socket"
require_relative "spindle_process"
require_relative "command_process"
require_relative "notify_socket"

# Starting bin/spindle the ways systemd does: with a NOTIFY_SOCKET the test
# reads (NotifySocket), with WATCHDOG_PID naming the server itself (set by a
# shell that then execs bin/spindle, keeping its pid), and through Debian's
# systemd-socket-activate, which opens the listening sockets and execs the
# server with LISTEN_FDS on the first connection.
module SystemdHelpers
  SOCKET_ACTIVATE = "/usr/bin/systemd-socket-activate"
  # systemd-socket-activate passes only a few variables; -E NAME passes the
  # test's own (Ruby's, Bundler's) through, as the unit's Environment= would.
  KEPT_OUT = /\A(LISTEN_|NOTIFY_SOCKET\z|WATCHDOG_)/

  def notify_socket(**options)
    socket = NotifySocket.new(**options)
    (@notify_sockets ||= []) << socket
    socket
  end

  def close_notify_sockets
    (@notify_sockets || []).each(&:close)
  end

  # bin/spindle ARGS with WATCHDOG_PID set to its own pid, as systemd sets it.
  def spawn_watched(args, env:)
    shell = ["/bin/sh", "-c", 'WATCHDOG_PID=$$ exec "$0" "$@"', RbConfig.ruby, SpindleProcess::BIN]
    process = CommandProcess.new(shell, args, env: env)
    @processes << process
    process.wait_for_start
    process
  end

  # systemd-socket-activate -l LISTEN... bin/spindle ARGS. It execs the
  # server on the first connection: the caller connects, then waits for the
  # start-up line.
  def socket_activate(listens, args, fdnames: nil, env: {}, chdir: SpindleProcess::ROOT)
    command = [SOCKET_ACTIVATE, *listens.flat_map { |l| ["-l", l] }]
    command << "--fdname=#{fdnames}" if fdnames
    ENV.each_key { |name| command.push("-E", name) unless name.match?(KEPT_OUT) }
    env.each { |name, value| command.push("-E", "#{name}=#{value}") }
    process = CommandProcess.new(command + [RbConfig.ruby, SpindleProcess::BIN], args, chdir: chdir)
    @processes << process
    assert process.wait_for_output(/Listening on .* as 3\./), process.output
    process
  end


  # GET / on a fresh connection to a bind; the JSON body of test/support/apps/systemd.ru.
  def app_report(process, bind = process.binds.first)
    connection = bind.tcp? ? HttpClient.connect(bind.host, bind.port) : HttpClient.connect_unix(bind.path)
    connection.write(HttpClient.request("GET", "/", [["Connection", "close"]]))
    response = connection.read_response
    assert_equal 200, response.status, response.to_s
    JSON.parse(response.body)
  ensure
    connection&.close
  end

  # A process that is not our child (a USR2 successor) has gone (or is a zombie).
  def gone?(pid)
    File.read("/proc/#{pid}/stat")[/\) (\S)/, 1] == "Z"
  rescue Errno::ENOENT, Errno::ESRCH
    true
  end
end
