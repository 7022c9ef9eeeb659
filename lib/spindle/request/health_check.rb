# frozen_string_literal: true

module Spindle
  # --health-path: the server answers GET and HEAD of one path itself, so a
  # load balancer's health check sees the server's state, not the app's: 200
  # while it serves, 503 from the moment a stop begins (the drain delay, then
  # the drain), which is what takes the host out of the pool before it stops
  # accepting. Other methods on the path go to the app like any request.
  #
  # Per request it costs one String comparison (PATH_INFO against the path);
  # without --health-path it is not on the request path at all
  # (RequestPath::Health puts it there).
  class HealthCheck
    METHODS = %w[GET HEAD].freeze
    SERVING = "ok\n"
    STOPPING = "stopping\n"

    def self.for(path) = path && new(path)

    def initialize(path)
      @path = path.dup.freeze
    end

    # Whether env asks for the health path (a GET or HEAD of it).
    def asked?(env) = env["PATH_INFO"] == @path && METHODS.include?(env["REQUEST_METHOD"])

    # The response for env when it asks for the health path, else nil.
    # serving: false once a stop has begun.
    def response(env, serving)
      return nil unless asked?(env)

      # Fresh headers each time: the writer and the rack.response_finished
      # callbacks may see (and keep) them.
      headers = { "content-type" => "text/plain", "cache-control" => "no-store" }
      serving ? [200, headers, [SERVING]] : [503, headers, [STOPPING]]
    end
  end
end
