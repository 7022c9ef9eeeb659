# frozen_string_literal: true

# bench/lib/bench/clients/idle_holder.rb PORT COUNT
#
# Opens COUNT keep-alive connections to 127.0.0.1:PORT, one after another,
# and makes one GET / on each (so each is a served keep-alive connection,
# then idle). Prints one JSON line ({"event":"open",...}) and waits on stdin:
#   ping  -> sends GET / on every connection still open, reads every answer,
#            prints {"event":"ping","answered":..,"closed":..,"failed":..}
#   exit  -> closes everything and exits (also on EOF).
# Gives up opening after 20 failures in a row (a server that stops
# answering), and reports how many it opened. Raises its own RLIMIT_NOFILE.
require "socket"
require "json"

port = Integer(ARGV.fetch(0))
count = Integer(ARGV.fetch(1))
soft, hard = Process.getrlimit(:NOFILE)
Process.setrlimit(:NOFILE, [hard, count + 256].max.clamp(soft, hard), hard)
$stdout.sync = true
REQUEST = "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"

def now = Process.clock_gettime(Process::CLOCK_MONOTONIC)

# Reads one response (head + content-length body); true when complete.
def read_response(sock, timeout)
  deadline = now + timeout
  buf = +""
  loop do
    if (head_end = buf.index("\r\n\r\n"))
      length = buf[0, head_end][/^content-length:\s*(\d+)/i, 1].to_i
      return true if buf.bytesize >= head_end + 4 + length
    end
    left = deadline - now
    return false if left <= 0 || !sock.wait_readable(left)

    chunk = sock.read_nonblock(65_536, exception: false)
    return false if chunk.nil?
    next if chunk == :wait_readable

    buf << chunk
  end
rescue SystemCallError, IOError
  false
end

socks = []
failures_in_row = failures = 0
started = now
first_at = nil
while socks.size < count && failures_in_row < 20
  begin
    sock = Socket.tcp("127.0.0.1", port, connect_timeout: 5)
    sock.write(REQUEST)
    if read_response(sock, 5)
      first_at ||= now
      socks << sock
      failures_in_row = 0
    else
      sock.close
      failures += 1
      failures_in_row += 1
    end
  rescue SystemCallError, IOError => e
    failures += 1
    failures_in_row += 1
    warn "idle_holder: #{e.class}: #{e.message}" if failures_in_row == 1
  end
end
puts JSON.generate(event: "open", opened: socks.size, wanted: count, failures: failures,
                   seconds: (now - started).round(2))

while (line = $stdin.gets)
  case line.strip
  when "ping"
    t = now
    sent = socks.map do |s|
      s.write(REQUEST)
      true
    rescue SystemCallError, IOError
      false
    end
    answered = closed = 0
    socks.each_with_index do |s, i|
      next closed += 1 unless sent[i]

      read_response(s, 5) ? answered += 1 : closed += 1
    end
    puts JSON.generate(event: "ping", answered: answered, not_answered: closed, of: socks.size,
                       seconds: (now - t).round(2), idle_for_s: (t - first_at.to_f).round(1))
  when "exit" then break
  end
end
socks.each(&:close)
