# frozen_string_literal: true

require "socket"
require "uri"
require_relative "listener/bind_failure"
require_relative "listener/tcp_bind"

module Spindle
  # One listening socket, opened from a bind URI. Knows what to tell the Rack env
  # about itself (scheme, default server name and port) and what to print. An
  # ssl:// bind is a TCP listener with a TLS::Context: its accepted sockets
  # come out wrapped (TLS::Socket), and openssl is loaded only for one.
  class Listener
    class Error < StandardError; end

    # accept failed because the process (EMFILE) or the system (ENFILE) has no
    # file descriptor left. Engines back off accepting and keep serving.
    class Exhausted < StandardError; end

    # accept failed because the socket no longer listens (#stop_listening,
    # here or in the master): engines stop accepting on it; the stop order
    # that comes with it drains them.
    class Closed < StandardError; end

    attr_reader :io, :uri, :server_name, :server_port, :tls

    # What every request on an ssl:// bind says about its scheme (Rack SPEC, CGI).
    TLS_ENV = { "rack.url_scheme" => "https", "HTTPS" => "on" }.freeze

    PORTS = (0..65_535)

    # Options a tcp:// or unix:// bind takes in its query (?name=value).
    # fdname: the socket systemd passes under that name (Systemd::Activation).
    BIND_OPTIONS = %w[proxy_protocol fdname].freeze
    # Schemes whose connections may start with a PROXY protocol header.
    PROXY_SCHEMES = %w[tcp unix].freeze

    # Returns the listeners a bind opens: one, or for a tcp:// or ssl:// bind
    # whose host is a name, one per address it names (TcpBind). note, when
    # given, is called with a line for each address skipped because this
    # machine cannot have it, for the log.
    def self.open(uri, backlog:, &note)
      parsed = URI.parse(uri)
      proxy = proxy_protocol?(parsed, uri)
      listeners = case parsed.scheme
                  when "tcp" then open_tcp(parsed, backlog, uri, &note)
                  when "unix" then [open_unix(parsed, backlog, uri)]
                  when "ssl" then open_ssl(parsed, backlog, uri, &note)
                  else raise Error, "unsupported bind #{uri.inspect} (use tcp://HOST:PORT, " \
                                    "ssl://HOST:PORT?cert=PATH&key=PATH or unix://PATH)"
                  end
      listeners.each(&:proxy_protocol!) if proxy
      listeners
    rescue URI::InvalidURIError
      raise Error, "invalid bind URI #{uri.inspect}"
    end

    # ?proxy_protocol=true (or false). Checked before anything is bound;
    # an unknown option is a typo that would otherwise go unnoticed.
    def self.proxy_protocol?(parsed, shown)
      options = URI.decode_www_form(parsed.query.to_s).to_h
      unknown = PROXY_SCHEMES.include?(parsed.scheme) ? options.keys - BIND_OPTIONS : []
      if unknown.any?
        raise Error, "bind #{shown}: unknown option #{unknown.first.inspect} (known: #{BIND_OPTIONS.join(', ')})"
      end

      value = options.fetch("proxy_protocol", "false")
      unless %w[true false].include?(value)
        raise Error, "bind #{shown}: proxy_protocol must be true or false, got #{value.inspect}"
      end
      return false if value == "false"
      return true if PROXY_SCHEMES.include?(parsed.scheme)

      raise Error, "bind #{shown}: proxy_protocol is not supported on #{parsed.scheme}:// binds yet"
    rescue ArgumentError
      raise Error, "bind #{shown}: malformed options #{parsed.query.inspect}"
    end

    # The port a bind names, checked: the kernel takes a port as 16 bits, so
    # 99999 would silently become 34463. 0 asks the kernel for a free port.
    def self.port_of(uri, shown)
      raise Error, "bind #{shown} has no port" unless uri.port
      raise Error, "bind #{shown}: port #{uri.port} is outside 0-65535" unless PORTS.cover?(uri.port)

      uri.port
    end

    # shown: the URI as the operator wrote it, for messages (URI#to_s turns
    # unix:///x into unix:/x). Each listener's uri names the address it
    # listens on, so the start-up line shows every one; SERVER_NAME stays
    # the host as written.
    def self.open_tcp(uri, backlog, shown = uri.to_s, &note)
      host = uri.hostname.to_s.empty? ? "0.0.0.0" : uri.hostname
      bound = TcpBind.open(host, port_of(uri, shown))
      bound.skipped.each { |address, error| note&.call(BindFailure.skipped(shown, address, error)) }
      bound.sockets.map { |socket| listening(socket, host, backlog) }
    rescue SystemCallError, SocketError => e
      bound&.sockets&.each(&:close)
      raise Error, BindFailure.message(uri, shown, e)
    end

    def self.listening(socket, host, backlog)
      socket.listen(backlog)
      address = socket.local_address
      ip = address.ipv6? ? "[#{address.ip_address}]" : address.ip_address
      new(socket, "tcp://#{ip}:#{address.ip_port}", host, address.ip_port.to_s)
    end

    # The certificate and key are read before the port is bound, so a bad
    # file stops the boot with nothing half open.
    def self.open_ssl(uri, backlog, shown = uri.to_s, &note)
      tls = tls_context(uri, shown)
      open_tcp(uri, backlog, shown, &note).map do |tcp|
        new(tcp.io, tcp.uri.sub("tcp://", "ssl://"), tcp.server_name, tcp.server_port, tls: tls)
      end
    end

    def self.tls_context(uri, shown)
      require_relative "tls/context"
      TLS::Context.new(TLS::Settings.parse(uri.query, shown), shown)
    end

    # HUP rereads every ssl:// listener's certificate and key (a bad pair is
    # logged and the old one kept): one Reopen action per certificate (the
    # listeners of one bind share theirs), once per process tree (children
    # inherit it across fork).
    def self.reload_tls_on_hup(listeners, log)
      listeners.filter_map(&:tls).uniq.each { |tls| tls.reload_on_hup(log) }
    end

    def self.open_unix(uri, backlog, shown = uri.to_s)
      path = "#{uri.host}#{uri.path}"
      remove_stale_socket(path)
      server = Socket.new(:UNIX, :STREAM)
      server.bind(Addrinfo.unix(path))
      server.listen(backlog)
      new(server, "unix://#{path}", "localhost", "80", path: path)
    rescue SystemCallError, ArgumentError => e
      server&.close
      raise Error, BindFailure.message(uri, shown, e)
    end

    # A socket file left by a process that died is in the way; one that answers
    # belongs to a live server and must not be taken over.
    def self.remove_stale_socket(path)
      return unless File.socket?(path)

      UNIXSocket.new(path).close
      raise Error, "address already in use: unix://#{path}"
    rescue Errno::ECONNREFUSED
      File.unlink(path)
    end

    # owned: false for a socket systemd made (socket activation): closing it
    # never unlinks a UNIX socket's file, and a stop never shuts it down.
    def initialize(io, uri, server_name, server_port, path: nil, tls: nil, owned: true)
      @io = io
      @tls = tls
      @uri = uri
      @server_name = server_name
      @server_port = server_port
      @path = path
      @unix = !path.nil?
      @owned = owned
      @proxy_protocol = false
    end

    def unix? = @unix
    def tls? = !@tls.nil?

    # Connections must begin with a PROXY protocol header (HTTP::ProxyHeader).
    def proxy_protocol? = @proxy_protocol

    def proxy_protocol!
      @proxy_protocol = true
      self
    end

    # Returns a connected socket, or nil when there is none to take right now.
    # TCP_NODELAY: a response is written whole, so Nagle would only add delay.
    def accept_nonblock
      socket, = @io.accept_nonblock(exception: false)
      return nil if socket == :wait_readable

      socket.setsockopt(:TCP, :NODELAY, true) unless @unix
      @tls ? @tls.wrap(socket) : socket
    rescue Errno::ECONNABORTED, Errno::EPROTO, Errno::EINTR
      nil # the client gave up before we took it
    rescue Errno::EMFILE, Errno::ENFILE => e
      raise Exhausted, e.message
    rescue Errno::EINVAL
      raise Closed, "#{@uri} no longer listens"
    end

    # The process in charge (a single process, or the master) stops, and no
    # successor serves these sockets: new connections are refused from now
    # on, at once, instead of waiting in the backlog, which nobody accepts
    # any more and the kernel resets at exit. A load balancer retries a
    # refused connection on another host; a reset one it may not.
    #
    # shutdown, not close: a cluster's workers share the socket, and the
    # kernel refuses only once every process has closed it, while a worker
    # whose one thread is inside the app (the blocking engine) could not
    # close its copy until the request ended. shutdown stops the socket
    # itself, in every process at once, and the descriptor stays valid in
    # the selectors that still watch it. Connections already in the backlog
    # are reset now rather than at exit (a unix socket's stay acceptable).
    # A socket systemd passed is systemd's: it keeps queueing connections
    # for the next start, as socket activation promises.
    def stop_listening
      @io.shutdown(Socket::SHUT_RD) if @owned && !@io.closed?
    rescue SystemCallError, IOError
      nil
    end

    # unlink: false leaves a UNIX socket's file in place, for a process that
    # shares the socket with others (a worker, or a master handing over).
    def close(unlink: true)
      @io.close unless @io.closed?
      File.unlink(@path) if unlink && @owned && @path && File.socket?(@path)
    rescue Errno::ENOENT
      nil
    end

    # For a hot restart: the fd crosses exec, and the URI says what it is
    # (with ?proxy_protocol=true when it is one: the successor must expect
    # the header too; an ssl:// one with its files, which the new process
    # reads again). #uri itself stays plain: it is what the start-up line
    # shows. ":systemd" marks a socket systemd passed: it stays systemd's.
    def handover
      query = @tls ? @tls.settings.query : ("proxy_protocol=true" if @proxy_protocol)
      "#{@io.fileno}#{':systemd' unless @owned}=#{@uri}#{"?#{query}" if query}"
    end

    # The listener a previous master passed across exec ("fd[:systemd]=uri").
    def self.inherit(spec)
      fd, uri = spec.split("=", 2)
      fd, origin = fd.split(":", 2)
      io = Socket.for_fd(Integer(fd))
      io.autoclose = true
      parsed = URI.parse(uri)
      plain = parsed.query ? uri.delete_suffix("?#{parsed.query}") : uri
      owned = origin != "systemd"
      listener = case parsed.scheme
                 when "unix" then new(io, plain, "localhost", "80", path: "#{parsed.host}#{parsed.path}", owned: owned)
                 when "ssl" then new(io, plain, parsed.hostname, io.local_address.ip_port.to_s,
                                     tls: tls_context(parsed, uri), owned: owned)
                 else new(io, plain, parsed.hostname, io.local_address.ip_port.to_s, owned: owned)
                 end
      parsed.query == "proxy_protocol=true" ? listener.proxy_protocol! : listener
    end

    # A listening socket systemd opened (Systemd::Activation): its address
    # says what it is. Anything else passed as one is an error, not a
    # listener that never accepts.
    def self.activated(io)
      unless io.getsockopt(:SOCKET, :TYPE).int == Socket::SOCK_STREAM && io.getsockopt(:SOCKET, :ACCEPTCONN).bool
        raise Error, "socket activation: fd #{io.fileno} is not a listening stream socket"
      end

      address = io.local_address
      return new(io, "unix://#{address.unix_path}", "localhost", "80", path: address.unix_path, owned: false) if address.unix?

      host = address.ip_address
      new(io, "tcp://#{address.ipv6? ? "[#{host}]" : host}:#{address.ip_port}", host, address.ip_port.to_s,
          owned: false)
    end
  end
end
