# frozen_string_literal: true

require "socket"
require "uri"
require_relative "../listener"

module Spindle
  module Systemd
    # Socket activation (sd_listen_fds(3)): systemd, or systemd-socket-activate,
    # opens the listening sockets a .socket unit names and starts Spindle with
    # them as file descriptors 3, 4, ... and LISTEN_FDS (how many), LISTEN_PID
    # (which process they are for) and LISTEN_FDNAMES (FileDescriptorName=,
    # colon separated) in the environment.
    #
    # Each -b bind takes the inherited sockets with its addresses (or, when
    # the bind says ?fdname=NAME, the one of that name); binds no socket
    # matches are opened as usual. A socket no bind asks for is a start-up
    # error naming it: serving on an address the operator did not list, or
    # silently leaving it unserved, would both surprise.
    #
    # The variables are removed once read, so nothing this process starts
    # (workers fork; a USR2 successor gets the sockets through HotRestart)
    # takes the sockets for its own.
    class Activation
      VARIABLES = %w[LISTEN_FDS LISTEN_PID LISTEN_FDNAMES].freeze
      FIRST_FD = 3 # SD_LISTEN_FDS_START

      # One socket systemd passed: its fd, name and the Listener made of it.
      Passed = Struct.new(:fd, :name, :listener, keyword_init: true) do
        def describe = "fd #{fd} (#{listener.uri}#{", name #{name}" unless name.to_s.empty?})"
      end

      # The sockets passed to this process; empty without socket activation.
      def self.take(env = ENV)
        values = VARIABLES.to_h { |name| [name, env.delete(name)] }
        count = Integer(values["LISTEN_FDS"].to_s, 10, exception: false)
        return new([]) unless count&.positive? && Integer(values["LISTEN_PID"].to_s, 10, exception: false) == Process.pid

        names = values["LISTEN_FDNAMES"].to_s.split(":")
        new(Array.new(count) { |i| adopt(FIRST_FD + i, names[i]) })
      end

      def self.adopt(fd, name)
        io = Socket.for_fd(fd)
        io.autoclose = true
        # Not for programs the app runs; a USR2 successor gets it explicitly.
        io.close_on_exec = true
        Passed.new(fd: fd, name: name, listener: Listener.activated(io))
      rescue SystemCallError, ArgumentError => e
        raise Listener::Error, "socket activation: fd #{fd}#{" (#{name})" if name}: #{e.message}"
      end

      def initialize(passed)
        @passed = passed
      end

      def empty? = @passed.empty?

      # The listeners for binds, in their order: the inherited sockets when
      # any match, else those open (a block: uri -> [Listener]) makes. Every
      # passed socket is matched to a bind before anything is opened: one no
      # bind asks for is then reported as such, not as the "address already
      # in use" a bind on its port would meet. Raises Listener::Error for a
      # named socket that is missing or has another address, and for an
      # inherited socket no bind took.
      def listeners_for(binds, &open)
        left = @passed.dup
        claims = binds.map { |uri| claim(uri, left) }
        refuse_unclaimed(left, binds)
        listeners = []
        binds.zip(claims) do |uri, found|
          listeners.concat(found.empty? ? open.call(uri) : found.map { |p| adopt_for(uri, p.listener) })
        end
        listeners
      rescue Listener::Error
        listeners&.each { |l| l.close(unlink: false) }
        @passed.each { |p| p.listener.close(unlink: false) }
        raise
      end

      private

      # The bind's options apply to the socket it takes: ?proxy_protocol=true,
      # or an ssl:// bind's certificate (the socket is plain TCP to systemd).
      def adopt_for(uri, listener)
        parsed = URI.parse(uri)
        if parsed.scheme == "ssl"
          return Listener.new(listener.io, listener.uri.sub("tcp://", "ssl://"), listener.server_name,
                              listener.server_port, tls: Listener.tls_context(parsed, uri), owned: false)
        end
        Listener.proxy_protocol?(parsed, uri) ? listener.proxy_protocol! : listener
      end

      # The passed sockets a bind takes: the one it names (?fdname=), else
      # every one with an address of the bind (tcp://localhost can take
      # both 127.0.0.1 and ::1). A bind that takes any opens nothing itself:
      # the .socket unit says where to listen.
      def claim(uri, left)
        parsed = URI.parse(uri)
        name = URI.decode_www_form(parsed.query.to_s).to_h["fdname"]
        found = name ? [named(uri, name, left)] : left.select { |p| same_address?(parsed, p.listener) }
        found.each { |p| left.delete(p) }
      rescue URI::InvalidURIError
        raise Listener::Error, "invalid bind URI #{uri.inspect}"
      end

      def named(uri, name, left)
        found = left.find { |p| p.name == name }
        raise Listener::Error, "bind #{uri} asks for the socket named #{name}, and systemd passed none by that name" unless found
        return found if same_address?(URI.parse(uri), found.listener)

        raise Listener::Error, "bind #{uri} names the socket #{name}, but that is #{found.listener.uri}"
      end

      def refuse_unclaimed(left, binds)
        return if left.empty?

        passed = left.first.listener.uri
        raise Listener::Error, "socket activation passed #{left.map(&:describe).join(', ')}, " \
                               "which no bind asks for: #{remedy(passed, binds)}"
      end

      # A bind on the socket's port but another address (-b tcp://0.0.0.0:80
      # for systemd's [::]:80) is the likely mistake: name it, and the bind
      # that takes the socket instead.
      def remedy(passed, binds)
        port = URI.parse(passed).port
        near = binds.find { |uri| port && URI.parse(uri).then { |b| b.scheme != "unix" && b.port == port } }
        return "add -b #{passed} or remove it from the .socket unit" unless near

        "-b #{near} has its port on another address; bind -b #{passed} instead (the socket's address), " \
          "or change the .socket unit"
      end

      # Addresses compare resolved: tcp://localhost:80 is 127.0.0.1:80.
      def same_address?(parsed, listener)
        address = listener.io.local_address
        case parsed.scheme
        when "unix" then address.unix? && address.unix_path == "#{parsed.host}#{parsed.path}"
        when "tcp", "ssl" then address.ip? && tcp_match?(parsed, address)
        else false
        end
      end

      def tcp_match?(parsed, address)
        return false unless parsed.port == address.ip_port

        host = parsed.hostname.to_s.empty? ? "0.0.0.0" : parsed.hostname
        Listener::TcpBind.addresses(host, parsed.port).any? { |a| a.ip_address == address.ip_address }
      rescue SocketError
        false
      end
    end
  end
end
