# frozen_string_literal: true

require "socket"
require "tmpdir"
require "fileutils"
require_relative "waiting"

# The receiving end of sd_notify, as systemd opens it: a UNIX datagram socket
# (a file, or a name in the abstract namespace) whose address goes to the
# server in NOTIFY_SOCKET. SO_PASSCRED makes the kernel attach the sender's
# pid to every datagram, which is how systemd tells the main process's
# messages from others'; the tests check the same.
class NotifySocket
  include Minitest::Assertions
  include Waiting

  # One datagram: its fields ("READY" => "1") and the pid that sent it.
  Message = Struct.new(:fields, :pid, :text, keyword_init: true) do
    def [](name) = fields[name]
  end

  attr_accessor :assertions
  attr_reader :address

  # abstract: bind "@name" (no file) instead of a path.
  def initialize(abstract: false)
    @assertions = 0
    @dir = Dir.mktmpdir("spn")
    @address = abstract ? "@spindle-test-#{Process.pid}-#{object_id}" : File.join(@dir, "notify.sock")
    @socket = Socket.new(:UNIX, :DGRAM)
    @socket.setsockopt(:SOCKET, :PASSCRED, true)
    @socket.bind(Addrinfo.unix(abstract ? "\0#{@address[1..]}" : @address))
    @messages = []
    @lock = Mutex.new
    @reader = Thread.new { read_loop }
  end

  def env = { "NOTIFY_SOCKET" => @address }

  def messages = @lock.synchronize { @messages.dup }

  # Waits for a message (after the first `after` ones) with every field
  # given (a Regexp or a String); returns it.
  def await(after: 0, what: nil, **fields)
    wait_until(what || "a notification with #{fields.inspect}; got #{texts.inspect}") do
      messages.drop(after).find { |m| fields.all? { |name, value| value === m[name.to_s] } } # rubocop:disable Style/CaseEquality
    end
  end

  # Index just past the last message with these fields (for `after:`).
  def index_after(message) = messages.index { |m| m.equal?(message) } + 1

  def texts = messages.map(&:text)

  def close
    @socket.close
    @reader.join(1)
    FileUtils.rm_rf(@dir)
  end

  private

  def read_loop
    loop do
      data, _, _, *controls = @socket.recvmsg(65_536)
      break if data.nil?

      record(data, controls)
    end
  rescue IOError, SystemCallError
    nil
  end

  def record(data, controls)
    credentials = controls.find { |c| c.cmsg_is?(:SOCKET, :CREDENTIALS) }
    pid = credentials&.data&.unpack1("i")
    fields = data.lines.to_h { |line| line.chomp.split("=", 2) }
    @lock.synchronize { @messages << Message.new(fields: fields, pid: pid, text: data) }
  end
end
