# frozen_string_literal: true

module Spindle
  # --health-path: the server answers GET and HEAD of one path itself, so a
  # load balancer's health check sees the server's state, not the app's: 200
  # while it serves, 503 from the moment a stop begins (the drain delay, then
  # the drain), which is what takes the host out of the pool before it stops
  # accepting. Other methods on the path go to the app like any request.
  #
  # Per request it costs one String comparison (PATH_INFO against the path);
  # without --health-path the Handler never asks.
  class HealthCheck
    METHODS = %w[GET HEAD].freeze
    SERVING = "ok\n"
    STOPPING = "stopping\n"

    def self.for(path) = path && new(path)

    def initialize(path)
      @path = path.dup.freeze
    end

    # The response for env when it asks for the health path, else nil.
    # serving: false once a stop has begun.
    def response(env, serving)
      return nil unless env["PATH_INFO"] == @path && METHODS.include?(env["REQUEST_METHOD"])

      # Fresh headers each time: the writer and the rack.response_finished
      # callbacks may see (and keep) them.
      headers = { "content-type" => "text/plain", "cache-control" => "no-store" }
      serving ? [200, headers, [SERVING]] : [503, headers, [STOPPING]]
    end
  end
end
