# frozen_string_literal: true

require_relative "request_path/write"
require_relative "request_path/finish"
require_relative "request_path/forwarded_headers"
require_relative "request_path/access_logging"
require_relative "request_path/health"
require_relative "request_path/static"
require_relative "request_path/shedding"
require_relative "request_path/oob_gc"
require_relative "request_path/request_deadline"

module Spindle
  # The steps a request passes through in Handler#serve, put together once,
  # when the Handler is built, from the config. A step that is off is not in
  # the chain at all, so it costs a request nothing: no call, no test of a
  # flag. With every option at its default the chain is the app, the writer
  # and the finish, and nothing else.
  #
  # Handler#serve runs three stages; a step wraps one of them (or two) and
  # hands on to the next, so each stage is a chain whose last link is the
  # work itself:
  #
  #   app       #call(env) → [status, headers, body]: Rack's own interface.
  #             ForwardedHeaders → AccessLogging → Health → Static →
  #             RequestDeadline → the app.
  #   response  #respond(conn, env, status, headers, body, keep_alive) →
  #             :keep_alive, :close, :hijacked or :failed.
  #             AccessLogging → Shedding → Write (the response writer).
  #   finish    #finish(conn, env, status, headers, body, error), once the
  #             response is out, whatever happened.
  #             OobGc → Finish (the body's close, the callbacks, the counts).
  #
  # Why Spindle's own stages and not Rack middleware for all of it: what the
  # access log, shedding and the out-of-band GC need happens after the app
  # returns, when the response is written or finished, which Rack middleware
  # never sees. The app stage's steps are Rack-shaped, so the health check,
  # static files and the trusted proxies' headers are middleware in all but
  # name; they sit inside the Handler's rescue, like the app.
  class RequestPath
    # The body of every 500 the server sends for a failed app or response.
    ERROR_BODY = "Internal Server Error\n"

    attr_reader :shedding, :steps

    # writer: the Handler's HTTP::ResponseWriter; tracker: its RequestTracker;
    # phase: the process's Phase (the health check answers from it);
    # shedding: a cluster worker's Handler, whose Rebalancer may ask it to
    # close connections (Handler#shed_one!).
    def initialize(app, config, log, writer:, tracker:, phase:, shedding: false)
      @chains = { app: app, response: Write.new(writer, log), finish: Finish.new(log, tracker) }
      @steps = { app: [], response: [], finish: [] } # the names of the steps that are on, outermost first
      add(:app, RequestDeadline.new(app, config.request_timeout, log)) if config.request_timeout
      add_answers(config, phase)
      @shedding = add(:response, Shedding.new(response)) if shedding
      add_access_log(log.access_log)
      add(:app, ForwardedHeaders.new(app, config.trusted_proxies)) if config.trusted_proxies
      add(:finish, OobGc.new(finish, tracker, config.oob_gc_every)) if config.oob_gc_every
    end

    # Each stage's first step (the chain), for Handler#serve.
    def app = @chains[:app]
    def response = @chains[:response]
    def finish = @chains[:finish]

    private

    # What the server answers itself, before the app: static files nearest
    # to it, the health check in front of them (a file at the health path
    # is never served: the check answers it).
    def add_answers(config, phase)
      add(:app, Static.new(app, StaticFiles.new(config.static))) if config.static
      add(:app, Health.new(app, HealthCheck.new(config.health_path), phase)) if config.health_path
    end

    # One step in two stages: it notes the request before the app, and
    # writes the line once the response is out.
    def add_access_log(access_log)
      return unless access_log

      step = AccessLogging.new(access_log, app, response)
      add(:app, step)
      add(:response, step)
    end

    # step: built around the stage's chain so far; it becomes the stage's
    # first step.
    def add(stage, step)
      @steps[stage].unshift(step.class.name.split("::").last)
      @chains[stage] = step
    end
  end
end
