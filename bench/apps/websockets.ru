# frozen_string_literal: true

# Scenario "websockets": WebSockets beside plain HTTP, the same app on every
# server. Only Rack's full hijack (env["rack.hijack"]), which Spindle's every
# engine and Puma both offer, and no gem: the handshake and the server's text
# frames are the few lines of RFC 6455 below.
#
#   GET /              "Hello World" (the HTTP load)
#   GET /ws            the upgrade: the app takes the socket, answers 101 and
#                      hands it to this process's reader thread; the request
#                      is over at once, on every engine (a blocking worker
#                      does not spend itself on one socket)
#   POST /broadcast    one text frame "broadcast SEQ from PID" to every socket
#                      this process holds; answers "sent N from PID"
#   GET /sockets       "N from PID"
#
# In a cluster each worker holds and broadcasts to its own sockets only: one
# POST reaches the sockets of the worker that took it. (A real app shares a
# broadcast across processes through Redis or PostgreSQL, as Action Cable
# does; that is the app's, not the server's.) The client sends nothing after
# the handshake, so the reader only watches for sockets that end.
require "digest/sha1"

# This process's sockets and the one thread that watches them. A child forked
# from a process that held sockets (a refork's mold, a preloaded master) gets
# copies of their descriptors: it closes its copies on its first use, so the
# sockets stay the process's that accepted them.
module WebSockets
  GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
  @lock = Mutex.new
  @sockets = []
  @pid = Process.pid
  @seq = 0

  module_function

  def accept_key(key) = [Digest::SHA1.digest("#{key}#{GUID}")].pack("m0")

  def open(env)
    io = env["rack.hijack"].call
    io.write("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" \
             "Sec-WebSocket-Accept: #{accept_key(env['HTTP_SEC_WEBSOCKET_KEY'])}\r\n\r\n")
    mine { @sockets << io }
    wake
  rescue IOError, SystemCallError
    io&.close
  end

  # A text frame from the server (unmasked), payloads under 64 KiB.
  def frame(text)
    body = text.b
    head = body.bytesize < 126 ? [0x81, body.bytesize].pack("CC") : [0x81, 126, body.bytesize].pack("CCn")
    head + body
  end

  def broadcast
    sockets, seq = mine { [@sockets.dup, @seq += 1] }
    data = frame("broadcast #{seq} from #{Process.pid}")
    sockets.count do |io|
      io.write(data)
      true
    rescue IOError, SystemCallError
      drop(io)
      false
    end
  end

  def count = mine { @sockets.size }

  # Every socket told "going away" (close code 1001) and closed: for a
  # before_refork hook, so the worker becoming the mold keeps none open
  # (docs/DEPLOY.md, "WebSockets"). Returns how many.
  def close_all
    sockets = mine { @sockets.slice!(0..) }
    goodbye = [0x88, 2, 1001].pack("CCn")
    sockets.each do |io|
      io.write(goodbye)
    rescue IOError, SystemCallError
      nil # gone already
    ensure
      io.close unless io.closed?
    end
    wake
    sockets.size
  end

  def drop(io)
    mine { @sockets.delete(io) }
    io.close unless io.closed?
    wake
  end

  # The reader's select(2) holds a reference to every socket it waits on, so
  # a socket closed meanwhile stays connected until the reader wakes. A full
  # pipe already wakes it.
  def wake = @wake.write_nonblock(".", exception: false)

  # The block under the lock, this process's state made first if the process
  # is new (a fork since the last call).
  def mine
    @lock.synchronize do
      adopt unless @pid == Process.pid
      @reader ||= start_reader
      yield
    end
  end

  def adopt
    @sockets.each { |io| io.close unless io.closed? } # copies of the parent's
    @sockets = []
    @pid = Process.pid
    @reader = nil
    @seq = 0
  end

  def start_reader
    wake_r, @wake = IO.pipe
    Thread.new { read_loop(wake_r) }
  end

  def read_loop(wake)
    loop do
      ready, = IO.select([wake, *@lock.synchronize { @sockets.dup }])
      ready.each { |io| io == wake ? wake.read_nonblock(4096, exception: false) : read_or_drop(io) }
    rescue IOError
      next # a socket a broadcast dropped while this waited on it
    end
  end

  def read_or_drop(io)
    drop(io) if io.read_nonblock(4096, exception: false).nil?
  rescue IOError, SystemCallError
    drop(io)
  end
end

text = ->(body) { [200, { "content-type" => "text/plain", "content-length" => body.bytesize.to_s }, [body]] }

run lambda { |env|
  case env["PATH_INFO"]
  when "/ws"
    return text.call("not a websocket") unless env["HTTP_UPGRADE"].to_s.casecmp?("websocket")

    WebSockets.open(env)
    [200, {}, []] # ignored: the app owns the socket
  when "/broadcast" then text.call("sent #{WebSockets.broadcast} from #{Process.pid}")
  when "/sockets" then text.call("#{WebSockets.count} from #{Process.pid}")
  else text.call("Hello World")
  end
}
