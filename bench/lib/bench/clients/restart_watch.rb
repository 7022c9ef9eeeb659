# frozen_string_literal: true

# ruby bench/lib/bench/clients/restart_watch.rb PORT COUNT SECONDS [PATH] -- COMMAND...
#
# What a restart does to open WebSockets, by hand (docs/DEPLOY.md,
# "WebSockets"): opens COUNT WebSockets to 127.0.0.1:PORT through
# websocket_holder.rb, runs COMMAND (kill -USR1 PID, bin/spindlectl refork,
# ...), then prints a line each time the count of open and closed sockets
# changes, with the seconds since COMMAND ran and [first, median, last] of
# when they closed, until none is open or SECONDS have passed; then asks for
# a broadcast (which reaches only sockets some serving worker holds).
require "open3"
require "json"

port, count, seconds = ARGV[0], ARGV[1], Float(ARGV[2])
split = ARGV.index("--") or abort "usage: restart_watch.rb PORT COUNT SECONDS [PATH] -- COMMAND..."
path = split > 3 ? ARGV[3] : "/ws"
command = ARGV[(split + 1)..]
holder = File.join(__dir__, "websocket_holder.rb")
clock = -> { Process.clock_gettime(Process::CLOCK_MONOTONIC) }

Open3.popen2(RbConfig.ruby, holder, port, count, path) do |stdin, stdout, thread|
  ask = ->(line) { stdin.puts(line) || JSON.parse(stdout.gets || abort("the holder exited")) }
  puts stdout.gets
  ask.call("mark")
  started = clock.call
  system(*command) unless command.empty?
  last = nil
  loop do
    status = ask.call("status")
    line = "#{status['open']} open, #{status['closed']} closed, #{status['close_frames']} close frames, " \
           "closed after #{status['closed_after_s'].inspect} s"
    elapsed = clock.call - started
    puts format("t=%.1fs %s", elapsed, line) unless line == last
    last = line
    break if status["open"].zero? || elapsed > seconds

    sleep 0.5
  end
  puts JSON.generate(ask.call("broadcast"))
  stdin.puts("exit")
  thread.join(30)
end
