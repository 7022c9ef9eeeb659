# frozen_string_literal: true

# bench/lib/bench/clients/websocket_holder.rb PORT COUNT [PATH]
#
# Opens COUNT WebSockets to 127.0.0.1:PORT (PATH, default /ws), one after
# another, each a real handshake (101 and the right Sec-WebSocket-Accept), and
# holds them, reading whatever the server sends. Prints one JSON line
# ({"event":"open",...}), then answers commands on stdin, one JSON line each:
#   broadcast -> POSTs /broadcast (4 at a time, a new connection each) until
#                every open socket has had a broadcast since the command, for
#                at most 20 POSTs or 15 s: in a cluster one POST reaches one
#                worker's sockets. {"event":"broadcast","received":..,"open":..,
#                "posts":..,"workers":{PID=>sent}}
#   mark      -> from now on, closes are timed from this moment ({"event":"mark"})
#   status    -> {"event":"status","open":..,"closed":..,"close_frames":..,
#                "closed_after_s":[min,median,max] since the mark}
#   exit      -> closes everything and exits (also on EOF).
# Gives up opening after 20 failures in a row, and says how many it opened.
# Raises its own RLIMIT_NOFILE.
require "socket"
require "json"
require "securerandom"
require "digest/sha1"

module WebSocketHolder
  GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

  def self.now = Process.clock_gettime(Process::CLOCK_MONOTONIC)

  # One client socket: the handshake, then the server's frames (unmasked,
  # RFC 6455 5.2) parsed as they arrive.
  class Conn
    attr_reader :io, :messages, :closed_at, :close_frame

    def initialize(port, path)
      @io = Socket.tcp("127.0.0.1", port, connect_timeout: 5)
      @buffer = +"".b
      @messages = []
      @closed_at = nil
      @close_frame = false
      handshake(port, path)
    end

    def open? = @closed_at.nil?

    # Reads what is there; false once the server ended the connection.
    def pump
      data = @io.read_nonblock(65_536, exception: false)
      return true if data == :wait_readable
      return finish if data.nil?

      @buffer << data
      parse
      open?
    rescue IOError, SystemCallError
      finish
    end

    def finish
      @closed_at ||= WebSocketHolder.now
      @io.close unless @io.closed?
      false
    end

    private

    def handshake(port, path)
      key = SecureRandom.base64(16)
      @io.write("GET #{path} HTTP/1.1\r\nHost: 127.0.0.1:#{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" \
                "Sec-WebSocket-Key: #{key}\r\nSec-WebSocket-Version: 13\r\n\r\n")
      head = read_head
      expected = [Digest::SHA1.digest("#{key}#{GUID}")].pack("m0")
      raise IOError, "no 101: #{head.lines.first&.strip.inspect}" unless head.start_with?("HTTP/1.1 101")
      raise IOError, "wrong Sec-WebSocket-Accept" unless head[/^sec-websocket-accept:\s*(\S+)/i, 1] == expected
    end

    def read_head
      deadline = WebSocketHolder.now + 5
      until (at = @buffer.index("\r\n\r\n"))
        left = deadline - WebSocketHolder.now
        raise IOError, "no handshake answer within 5 s" if left <= 0 || !@io.wait_readable(left)

        data = @io.read_nonblock(65_536, exception: false)
        raise IOError, "closed during the handshake" if data.nil?

        @buffer << data unless data == :wait_readable
      end
      head = @buffer.slice!(0, at + 4)
      head
    end

    def parse
      while @buffer.bytesize >= 2
        b0, b1 = @buffer.unpack("CC")
        length, offset = b1 & 0x7f, 2
        length, offset = @buffer.unpack1("@2n"), 4 if length == 126
        length, offset = @buffer.unpack1("@2Q>"), 10 if length == 127
        return if @buffer.bytesize < offset + length

        payload = @buffer.byteslice(offset, length)
        @buffer = @buffer.byteslice(offset + length..)
        (b0 & 0x0f) == 8 ? @close_frame = true : @messages << payload
      end
    end
  end

  # The held sockets and the commands.
  class Holder
    def initialize(port, count, path)
      @port = port
      @count = count
      @path = path
      @conns = []
      @mark = WebSocketHolder.now
    end

    def open_all
      started = WebSocketHolder.now
      failures = in_row = 0
      while @conns.size < @count && in_row < 20
        begin
          @conns << Conn.new(@port, @path)
          in_row = 0
        rescue IOError, SystemCallError => e
          failures += 1
          in_row += 1
          warn "websocket_holder: #{e.class}: #{e.message}" if in_row == 1
        end
      end
      { event: "open", opened: @conns.size, wanted: @count, failures: failures, seconds: (WebSocketHolder.now - started).round(2) }
    end

    # Reads every readable socket, waiting up to timeout; true when stdin has a line.
    def pump(timeout, input = nil)
      ios = @conns.select(&:open?).to_h { |c| [c.io, c] }
      ready, = IO.select(input ? [*ios.keys, input] : ios.keys, nil, nil, timeout)
      (ready || []).each { |io| ios[io]&.pump }
      ready&.include?(input)
    end

    # In a cluster one POST reaches one worker's sockets, and a worker that
    # is idle takes the next connection, so POSTs one after another can all
    # go to the same worker. Each try sends POSTS_AT_ONCE over as many
    # connections opened together, which the workers share out.
    def broadcast
      started = WebSocketHolder.now
      before = @conns.to_h { |c| [c, c.messages.size] }
      workers = {}
      posts = 0
      heard = -> { @conns.count { |c| c.messages.size > before[c] } }
      until heard.call >= @conns.count(&:open?) || posts >= 20 || WebSocketHolder.now - started > 15
        posts += POSTS_AT_ONCE
        post_broadcasts.each { |sent, pid| workers[pid] = sent }
        wait_until = WebSocketHolder.now + 1
        pump(0.05) while heard.call < @conns.count(&:open?) && WebSocketHolder.now < wait_until
      end
      { event: "broadcast", received: heard.call, open: @conns.count(&:open?), of: @conns.size, posts: posts,
        workers: workers, seconds: (WebSocketHolder.now - started).round(2) }
    end

    def status
      after = @conns.reject(&:open?).map { |c| (c.closed_at - @mark).round(3) }.sort
      { event: "status", open: @conns.count(&:open?), closed: after.size, close_frames: @conns.count(&:close_frame),
        closed_after_s: after.empty? ? nil : [after.first, after[after.size / 2], after.last] }
    end

    def mark = @mark = WebSocketHolder.now

    def close_all = @conns.each(&:finish)

    private

    POSTS_AT_ONCE = 4

    # POSTS_AT_ONCE POST /broadcast, connected together; [[sent, pid]] from
    # each "sent N from PID".
    def post_broadcasts
      socks = Array.new(POSTS_AT_ONCE) { Socket.tcp("127.0.0.1", @port, connect_timeout: 5) }
      socks.each { |s| s.write("POST /broadcast HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n") }
      socks.filter_map { |s| read_to_end(s)[/sent (\d+) from (\d+)/] && [Regexp.last_match(1).to_i, Regexp.last_match(2)] }
    rescue IOError, SystemCallError
      []
    ensure
      socks&.each(&:close)
    end

    def read_to_end(sock)
      out = +""
      deadline = WebSocketHolder.now + 10
      while WebSocketHolder.now < deadline && sock.wait_readable(deadline - WebSocketHolder.now)
        chunk = sock.read_nonblock(65_536, exception: false)
        break if chunk.nil?

        out << chunk unless chunk == :wait_readable
      end
      out
    end
  end

  def self.main(argv)
    port = Integer(argv.fetch(0))
    count = Integer(argv.fetch(1))
    soft, hard = Process.getrlimit(:NOFILE)
    Process.setrlimit(:NOFILE, [hard, count + 256].max.clamp(soft, hard), hard)
    $stdout.sync = true
    holder = Holder.new(port, count, argv.fetch(2, "/ws"))
    puts JSON.generate(holder.open_all)
    loop do
      next unless holder.pump(1, $stdin)

      line = $stdin.gets or break
      case line.strip
      when "broadcast" then puts JSON.generate(holder.broadcast)
      when "mark" then puts JSON.generate(event: "mark", at: holder.mark)
      when "status" then puts JSON.generate(holder.status)
      when "exit" then break
      end
    end
    holder.close_all
  end
end

WebSocketHolder.main(ARGV) if $PROGRAM_NAME == __FILE__
