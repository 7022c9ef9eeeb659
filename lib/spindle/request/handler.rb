# frozen_string_literal: true

require_relative "../version"
require_relative "connection"
require_relative "timed_connection"
require_relative "../http/response_writer"
require_relative "../http/early_hints"
require_relative "../http/hijack"
require_relative "../engine/outbox"
require_relative "request_tracker"
require_relative "../request_path"
require_relative "peer_address"
require_relative "request_name"
require_relative "../process/phase"

module Spindle
  # One complete request in, one app call, one response out, and an explicit
  # outcome for the engine: :keep_alive, :close or :hijacked. It is decided
  # here, once (the request, the process's phase and what the writer
  # managed), and the engine acts on it: on :keep_alive it reads the next
  # request once the response is out, on :close it closes the connection once
  # the response is out, on :hijacked it forgets the connection. Engines
  # decide when and on which thread or fiber this runs; what happens here is
  # the same for all. What the options add to a request (the health check,
  # static files, trusted proxies, the access log, queue time, shedding, the
  # out-of-band GC) are steps of its RequestPath, put together here once.
  class Handler
    RESPONSE_FINISHED = RequestPath::Finish::RESPONSE_FINISHED
    # Entries an env has room for before it grows: the template's 13, the
    # request line's 7, rack.input and the callbacks, and 10 header fields.
    # The base env is made with that room; each connection's template (a
    # merge) and each request's env (a copy) keep it. A template whose base
    # was a literal had room for 16, so every env grew (and rehashed its
    # entries) at its 17th, a cost every request paid (PERFORMANCE.md,
    # "The figures behind lib/'s comments"). The
    # room costs 416 bytes per connection (the template is 928, not 512).
    ENV_ROOM = 32
    # Refused PROXY headers are logged once, then at most once per this many
    # seconds with a count: a scanner on a PROXY bind must not flood the log.
    PROXY_LOG_EVERY = 60

    attr_reader :writer, :tracker, :path

    # phase: the process's Phase, which its Server moves: responses keep
    # their connection only while it serves, and the health path answers
    # 503 once a stop begins. multiprocess: a cluster worker, whose
    # Rebalancer may shed connections (#shed_one!).
    def initialize(app, config, log, multithread:, multiprocess: false, phase: Phase.new)
      @log = log
      @tracker = RequestTracker.new(durations: !config.metrics.nil?, one_thread: !multithread)
      @config = config
      @phase = phase
      @max_requests = config.max_keepalive_requests
      @access_log = log.access_log # for the requests the parser refuses
      @writer = HTTP::ResponseWriter.new(log, count_bytes: !@access_log.nil?)
      @early_hints = config.early_hints
      @path = RequestPath.new(app, config, log, writer: @writer, tracker: @tracker, phase: phase,
                                                shedding: multiprocess)
      @app = @path.app
      @response = @path.response
      @finish = @path.finish
      @base_env = base_env(multithread, multiprocess)
      @proxy_refusals = Log::Throttle.new(log, PROXY_LOG_EVERY)
    end

    # The next response (on any connection) that would keep its connection
    # closes it instead, so that its client reconnects, to a sibling worker
    # with fewer (Rebalancer). Only a cluster worker's handler sheds.
    def shed_one! = @path.shedding&.shed_one!

    def shedding? = @path.shedding&.shedding? || false

    # The env every request on this connection starts from.
    def env_template(conn_io, listener)
      env = @base_env.merge( # a copy keeps the base's room
        "SERVER_NAME" => listener.server_name,
        "SERVER_PORT" => listener.server_port,
        "REMOTE_ADDR" => remote_addr(conn_io, listener),
      )
      listener.tls? ? env.update(Listener::TLS_ENV) : env
    end

    # A new Connection for an accepted socket, writing through outbox (the
    # engine's: it finishes what a slow reader has not taken). On an ssl://
    # bind the socket is a TLS::Socket whose handshake is still to come: it
    # adds the client certificate to the env template once it is done.
    def open_connection(io, listener, outbox)
      kind = @path.timed? ? TimedConnection : Connection # timed: queue time is measured
      conn = kind.new(io, @config, env_template(io, listener), outbox,
                      proxy_protocol: listener.proxy_protocol?, tls: listener.tls?)
      conn.env_template["rack.hijack"] = HTTP::Hijack.new(conn)
      # Only with --early-hints: HTTP/1.1 clients that mishandle 1xx take the
      # 103 for the response (see HTTP::EarlyHints).
      conn.env_template["rack.early_hints"] = HTTP::EarlyHints.new(conn, @writer) if @early_hints
      io.env = conn.env_template if listener.tls?
      conn
    end

    # Serves the complete request buffered in conn: its env, the app (after
    # the app stage's steps), the response (RequestPath::Write, after the
    # response stage's), and the finish, whatever happened.
    def serve(conn)
      @tracker.start(conn)
      env = conn.finish_request_env
      env[RESPONSE_FINISHED] = []
      begin
        status, headers, body = @app.call(env)
      rescue SignalException, SystemExit
        raise
      rescue Exception => error # rubocop:disable Lint/RescueException -- an app error must not kill a thread
        status, headers, body = app_failed(env, error)
      end
      keep_alive = conn.keep_alive? && @phase.keep_alive? && conn.requests + 1 < @max_requests
      outcome = @response.respond(conn, env, status, headers, body, keep_alive)
      return outcome unless outcome == :failed

      status = 500 # the writer's 500 went out in place of what the app returned: the callbacks see it
      :close
    ensure
      @finish.finish(conn, env, status, headers, body, error)
      conn.reset_for_next_request if outcome == :keep_alive
    end

    # What the handler knows of a request in flight, for the log of a forced
    # stop: its method and path, escaped, never its body (RequestName).
    def self.describe(env) = RequestName.method_and_path(env)

    # A request the parser refused: its status, and the connection closes
    # (lingering: the rest of the request may be on its way).
    def refuse(conn, error)
      conn.refused!
      text = "#{error.message}\n"
      @writer.write_simple(conn, error.status, text)
      # No request to describe: the access log says what was answered.
      @access_log&.record(conn.env_template, nil, error.status, text.bytesize, nil)
    rescue *Engine::Outbox::CLIENT_GONE
      nil
    end

    # A connection on a PROXY bind whose first bytes are no valid PROXY
    # header: it is closed unanswered (the caller closes it); this logs it.
    def refuse_proxy_header(conn, error)
      peer = Log.escape(conn.env_template["REMOTE_ADDR"].to_s)
      @proxy_refusals.error("PROXY protocol header refused from #{peer}: #{error.message}; connection closed unanswered")
    end

    private

    def base_env(multithread, multiprocess)
      HTTP::Parser.sized_hash(ENV_ROOM).update(
        "rack.version" => [1, 3],
        "rack.errors" => $stderr,
        "rack.multithread" => multithread,
        "rack.multiprocess" => multiprocess,
        "rack.run_once" => false,
        "rack.url_scheme" => "http",
        "rack.hijack?" => true,
        "SCRIPT_NAME" => "",
        "SERVER_SOFTWARE" => "Spindle/#{VERSION}",
      ).freeze
    end

    # A UNIX-socket peer has no address; apps that parse REMOTE_ADDR as an IP get
    # loopback, which is where such a peer is. The raw sockaddr, not an
    # Addrinfo: that one object costs 2 KB of malloc per connection; and not
    # getnameinfo (PeerAddress says why).
    def remote_addr(io, listener)
      return "127.0.0.1" if listener.unix?

      PeerAddress.text(io.getpeername)
    rescue SocketError, SystemCallError
      "0.0.0.0"
    end

    # Each app error line names the request (RequestName.for_log).
    def app_failed(env, error)
      @log.exception(error, "app raised on #{RequestName.for_log(env)}")
      [500, { "content-type" => "text/plain" }, [RequestPath::ERROR_BODY]]
    end
  end
end
