# frozen_string_literal: true

require_relative "version"
require_relative "connection"
require_relative "http/response_writer"
require_relative "http/early_hints"
require_relative "http/hijack"
require_relative "engine/outbox"
require_relative "request_tracker"
require_relative "health_check"
require_relative "static_files"
require_relative "http/forwarded"
require_relative "peer_address"
require_relative "request_name"

module Spindle
  # One complete request in, one app call, one response out, and an explicit
  # outcome for the engine: :keep_alive, :close or :hijacked. It is decided
  # here, once (the request, the server's state and what the writer managed),
  # and the engine acts on it: on :keep_alive it reads the next request once
  # the response is out, on :close it closes the connection once the response
  # is out, on :hijacked it forgets the connection. Engines decide when and on
  # which thread or fiber this runs; what happens here is the same for all.
  class Handler
    CLIENT_GONE = [Errno::EPIPE, Errno::ECONNRESET, Errno::ENOTCONN, Errno::ETIMEDOUT,
                   IOError, Engine::Outbox::WriteTimeout].freeze
    ERROR_BODY = "Internal Server Error\n"
    RESPONSE_FINISHED = "rack.response_finished"
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

    attr_reader :writer, :tracker

    def initialize(app, config, log, multithread:, multiprocess: false, phase: nil)
      @phase = phase # issue 66: read once the handler follows the phase (its own branch)
      @app = app
      @log = log
      @tracker = RequestTracker.new(durations: !config.metrics.nil?, one_thread: !multithread)
      @config = config
      @max_requests = config.max_keepalive_requests
      @oob_gc_every = config.oob_gc_every
      @access_log = log.access_log # nil: off, and no request pays for it
      @writer = HTTP::ResponseWriter.new(log, count_bytes: !@access_log.nil?)
      @early_hints = config.early_hints
      @stopping = false
      @shed = 0 # connections to close after their next response (#shed_one!)
      @health = HealthCheck.for(config.health_path)
      @static = StaticFiles.for(config.static)
      @forwarded = config.trusted_proxies && HTTP::Forwarded.new(config.trusted_proxies)
      @base_env = base_env(multithread, multiprocess)
      @proxy_refusals = Log::Throttle.new(log, PROXY_LOG_EVERY)
    end

    # Set when a stop begins (the drain delay, or the drain itself): responses
    # from then on close their connection, and the health path answers 503.
    def stopping! = @stopping = true

    # The next response (on any connection) closes its connection, so that
    # its client reconnects, to a sibling worker with fewer (Rebalancer).
    def shed_one! = @shed += 1

    def shedding? = @shed.positive?

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
      conn = Connection.new(io, @config, env_template(io, listener), outbox,
                            proxy_protocol: listener.proxy_protocol?, tls: listener.tls?)
      conn.env_template["rack.hijack"] = HTTP::Hijack.new(conn)
      # Only with --early-hints: HTTP/1.1 clients that mishandle 1xx take the
      # 103 for the response (see HTTP::EarlyHints).
      conn.env_template["rack.early_hints"] = HTTP::EarlyHints.new(conn, @writer) if @early_hints
      io.env = conn.env_template if listener.tls?
      conn
    end

    # Serves the complete request buffered in conn.
    def serve(conn)
      @tracker.start(conn)
      env = conn.finish_request_env
      env[RESPONSE_FINISHED] = []
      @forwarded&.apply(env) # first: the access log records the client it names
      if @access_log
        started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
        request = @access_log.capture(env)
      end
      begin
        status, headers, body = @health&.response(env, !@stopping) || @static&.response(env) || @app.call(env)
      rescue SignalException, SystemExit
        raise
      rescue Exception => e # rubocop:disable Lint/RescueException -- an app error must not kill a thread
        error = e
        status, headers, body = app_failed(env, e)
      end
      outcome = conn.hijacked? ? :hijacked : respond(conn, env, status, headers, body)
      # The writer's 500 went out in place of what the app returned: that is
      # what the client got, so it is what the log and the callbacks see.
      failed = outcome == :failed
      if failed
        status = 500
        outcome = :close
      end
      log_access(env, request, status, headers, failed, started) if started
      outcome
    ensure
      close_body(env, headers, body)
      response_finished(env, status, headers, error) if env && !env[RESPONSE_FINISHED]&.empty?
      conn.release_input # after the body and the callbacks, which may still read rack.input
      @tracker.finish(conn)
      collect_garbage if @oob_gc_every
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
    rescue *CLIENT_GONE
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

    # The writer counted the body bytes it sent (HTTP::ResponseWriter::BODY_BYTES);
    # after a :failed response it was the 500's ERROR_BODY.
    # headers: the app's, whose x-request-id names the request when the
    # client sent none (RequestName).
    def log_access(env, request, status, headers, failed, started)
      bytes = failed ? ERROR_BODY.bytesize : env[HTTP::ResponseWriter::BODY_BYTES]
      @access_log.record(env, request, status, bytes, Process.clock_gettime(Process::CLOCK_MONOTONIC) - started,
                         headers)
    end

    # Takes one of #shed_one!'s closes (another thread may have taken the
    # last: the count never goes below zero, and then this one keeps its
    # connection).
    def shed
      return false unless @shed.positive?

      @shed -= 1
      true
    end

    # Each app error line names the request (RequestName.for_log).
    def app_failed(env, error)
      @log.exception(error, "app raised on #{RequestName.for_log(env)}")
      [500, { "content-type" => "text/plain" }, [ERROR_BODY]]
    end

    def respond(conn, env, status, headers, body)
      keep_alive = conn.keep_alive? && !@stopping && conn.requests + 1 < @max_requests && !(@shed.positive? && shed)
      @writer.write(conn, env, status, headers, body, keep_alive)
    rescue *CLIENT_GONE
      :close
    rescue HTTP::InvalidResponse => e
      # The app's mistake, not the server's: what it returned and what Rack
      # requires, without the writer's backtrace, which would point at Spindle.
      @log.error("app returned an invalid response to #{RequestName.for_log(env, headers)}: #{e.message}")
      fail_response(conn)
    rescue StandardError => e
      @log.exception(e, "response to #{RequestName.for_log(env, headers)} could not be written")
      fail_response(conn)
    end

    # After a failed response: a 500 if nothing was sent yet (:failed), else
    # :close; either way the connection closes, since the client cannot tell
    # where this response ends.
    def fail_response(conn)
      return :close if conn.response_started?

      @writer.write_simple(conn, 500, ERROR_BODY)
      :failed
    rescue StandardError
      :close
    end

    # Out-of-band GC: after the response is sent, when no other request is in
    # flight, so no client waits on the collection.
    def collect_garbage
      return unless (@tracker.served % @oob_gc_every).zero? && @tracker.in_flight.zero?

      GC.start
    end

    def close_body(env, headers, body)
      body.close if body.respond_to?(:close)
    rescue StandardError => e
      @log.exception(e, "body.close raised, for #{RequestName.for_log(env, headers)}")
    end

    # Rack SPEC: the callbacks run in reverse order of registration, like
    # ensure blocks: middleware that registered first is told last.
    def response_finished(env, status, headers, error)
      env[RESPONSE_FINISHED]&.reverse_each do |callback|
        callback.call(env, status, headers, error)
      rescue StandardError => e
        @log.exception(e, "rack.response_finished callback raised, for #{RequestName.for_log(env, headers)}")
      end
    end
  end
end
