# frozen_string_literal: true

# bench/lib/bench/clients/bad_client.rb PORT COUNT [THREADS]
#
# Sends COUNT malformed requests (from THREADS threads, default 16) to 127.0.0.1:PORT, each on its own new
# connection, cycling through a catalogue drawn from shared/BAD_INPUTS.md
# (each vector is also followed by a valid request on the same connection,
# which must never be answered). Reads until the server closes (5 s bound
# per connection) and prints one JSON line: how many got which status, how
# many were closed by the server, how many timed out, and whether any
# smuggled second response appeared.
require "socket"
require "json"

HOST = "127.0.0.1"
port = Integer(ARGV.fetch(0))
count = Integer(ARGV.fetch(1))
workers = Integer(ARGV.fetch(2, "16"))

H = "Host: a\r\n"
VECTORS = {
  "bare_lf" => "GET / HTTP/1.1\r\nHost: a\nX: b\r\n\r\n",
  "bare_cr" => "GET / HTTP/1.1\r\nHost: a\rX: b\r\n\r\n",
  "dup_content_length" => "POST / HTTP/1.1\r\n#{H}Content-Length: 1\r\nContent-Length: 0\r\n\r\nA",
  "cl_plus" => "POST / HTTP/1.1\r\n#{H}Content-Length: +5\r\n\r\nhello",
  "cl_hex" => "POST / HTTP/1.1\r\n#{H}Content-Length: 0x10\r\n\r\n",
  "cl_huge" => "POST / HTTP/1.1\r\n#{H}Content-Length: 999999999999999999999999999999\r\n\r\n",
  "te_and_cl" => "POST / HTTP/1.1\r\n#{H}Transfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\n",
  "te_http10" => "POST / HTTP/1.0\r\n#{H}Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
  "te_gzip" => "POST / HTTP/1.1\r\n#{H}Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
  "bad_chunk_size" => "POST / HTTP/1.1\r\n#{H}Transfer-Encoding: chunked\r\n\r\n0x5\r\nhello\r\n0\r\n\r\n",
  "chunk_len_mismatch" => "POST / HTTP/1.1\r\n#{H}Transfer-Encoding: chunked\r\n\r\n4\r\nWorld\r\n0\r\n\r\n",
  "space_before_colon" => "GET / HTTP/1.1\r\n#{H}Transfer-Encoding : chunked\r\n\r\n",
  "obs_fold" => "GET / HTTP/1.1\r\n#{H}X: a\r\n b\r\n\r\n",
  "nul_in_value" => "GET / HTTP/1.1\r\n#{H}X: a\x00b\r\n\r\n",
  "bad_version" => "GET / HTTP/1.a\r\n#{H}\r\n",
  "lowercase_method" => "get / HTTP/1.1\r\n#{H}\r\n",
  "no_host" => "GET / HTTP/1.1\r\n\r\n",
  "two_hosts" => "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
  "tls_bytes" => "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03".b,
  "long_line" => "GET /#{'a' * 9000} HTTP/1.1\r\n#{H}\r\n"
}.transform_values(&:b).freeze
SMUGGLE = "GET /smuggled HTTP/1.1\r\nHost: a\r\n\r\n"

statuses = Hash.new(0)
per_vector = Hash.new { |h, k| h[k] = Hash.new(0) }
closed = timeouts = connect_errors = smuggled = resets = 0
names = VECTORS.keys
lock = Mutex.new
next_index = -1
started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
Array.new(workers) do
  Thread.new do
    loop do
      i = lock.synchronize { next_index += 1 }
      break if i >= count

  name = names[i % names.size]
  begin
    sock = Socket.tcp(HOST, port, connect_timeout: 5)
  rescue SystemCallError, IOError
    lock.synchronize { connect_errors += 1 }
    next
  end
  begin
    sock.write(VECTORS[name] + SMUGGLE)
    data = +""
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 5
    loop do
      left = deadline - Process.clock_gettime(Process::CLOCK_MONOTONIC)
      if left <= 0 || !sock.wait_readable(left)
        lock.synchronize { timeouts += 1 }
        break
      end
      chunk = sock.read_nonblock(16_384, exception: false)
      break lock.synchronize { closed += 1 } if chunk.nil? # EOF: the server closed
      next if chunk == :wait_readable

      data << chunk
    end
  rescue Errno::ECONNRESET, Errno::EPIPE
    lock.synchronize { resets += 1; closed += 1 } # closed with unread input (RST): still closed
  ensure
    sock.close
  end
  status = data[/\AHTTP\/1\.[01] (\d{3})/, 1] || "none"
  lock.synchronize do
    statuses[status] += 1
    per_vector[name][status] += 1
    smuggled += 1 if data.scan(%r{HTTP/1\.[01] \d{3}}).size > 1
  end
    end
  end
end.each(&:join)
seconds = Process.clock_gettime(Process::CLOCK_MONOTONIC) - started
puts JSON.generate(sent: count, seconds: seconds.round(3), statuses: statuses, closed_by_server: closed, resets: resets, timeouts: timeouts,
                   connect_errors: connect_errors, second_response_seen: smuggled, per_vector: per_vector)
