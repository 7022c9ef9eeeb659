# frozen_string_literal: true

require_relative "request_path/write"
require_relative "request_path/finish"
require_relative "request_path/forwarded_headers"
require_relative "request_path/access_logging"
require_relative "request_path/health"
require_relative "request_path/static"
require_relative "request_path/shedding"
require_relative "request_path/oob_gc"
require_relative "request_path/queue_timing"
require_relative "request_path/queue_shedding"
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
  #             QueueTiming → ForwardedHeaders → AccessLogging → Health →
  #             QueueShedding → Static → RequestDeadline → the app.
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
  # static files, the trusted proxies' headers and the queue time are
  # middleware in all but name; they sit inside the Handler's rescue, like
  # the app.
  class RequestPath
    # The body of every 500 the server sends for a failed app or response.
    ERROR_BODY = "Internal Server Error\n"

    attr_reader :shedding, :steps

    # Whether requests are timed from their first byte (QueueTiming is on):
    # the Handler then opens TimedConnections.
    def timed? = @timed

    # writer: the Handler's HTTP::ResponseWriter; tracker: its RequestTracker;
    # phase: the process's Phase (the health check answers from it);
    # shedding: a cluster worker's Handler, whose Rebalancer may ask it to
    # close connections (Handler#shed_one!).
    def initialize(app, config, log, writer:, tracker:, phase:, shedding: false)
      @chains = { app: app, response: Write.new(writer, log), finish: Finish.new(log, tracker) }
      @steps = { app: [], response: [], finish: [] } # the names of the steps that are on, outermost first
      add(:app, RequestDeadline.new(app, config.request_timeout, log)) if config.request_timeout # app: the bare app here
      add_answers(config, phase, tracker, log)
      @shedding = add(:response, Shedding.new(response)) if shedding
      add_access_log(log.access_log)
      add_forwarded(config.trusted_proxies) if config.trusted_proxies
      add_queue_timing(config, log, tracker)
      add(:finish, OobGc.new(finish, tracker, config.oob_gc_every)) if config.oob_gc_every
    end

    # Each stage's first step (the chain), for Handler#serve.
    def app = @chains[:app]
    def response = @chains[:response]
    def finish = @chains[:finish]

    private

    # What the server answers itself, before the app: static files nearest
    # to it, the 503 of a request that waited too long in front of them,
    # the health check in front of all (a file at the health path is never
    # served, and a health check never shed: the check answers it).
    def add_answers(config, phase, tracker, log)
      add(:app, Static.new(app, StaticFiles.new(config.static))) if config.static
      add(:app, QueueShedding.new(app, config.max_queue_time, tracker, log)) if config.max_queue_time
      add(:app, Health.new(app, HealthCheck.new(config.health_path), phase)) if config.health_path
    end

    # Around the chain so far (#app: here, the parameter of #initialize
    # would be the bare app, and the steps inside would be skipped).
    def add_forwarded(networks) = add(:app, ForwardedHeaders.new(app, networks))

    # Queue time is measured only when something reads it: the metrics'
    # histogram, the access log's field, or --max-queue-time. Off, neither
    # the connections nor this stage read a clock for it.
    def add_queue_timing(config, log, tracker)
      @timed = !(config.metrics || log.access_log || config.max_queue_time).nil?
      return unless @timed

      forwarded = config.trusted_proxies && HTTP::Forwarded.new(config.trusted_proxies)
      add(:app, QueueTiming.new(app, tracker, forwarded))
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
