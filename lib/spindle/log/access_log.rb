# frozen_string_literal: true

require "json"
require_relative "line_format"
require_relative "../request/request_name"

module Spindle
  class Log
    # One line per request served (--access-log PATH, "-" for stdout), in one
    # of three formats (--access-log-format):
    #
    #   common:   127.0.0.1 - - [23/Nov/2026:05:37:41 +0000] "GET /a?b=1 HTTP/1.1" 200 6
    #   combined: the same, then "referer" "user agent", then the request id
    #             (RequestName.id: the request's X-Request-Id, else the
    #             x-request-id of the app's response; "-" when neither), the duration
    #             in milliseconds, as Apache's %D and nginx's $request_time are
    #             appended, and the queue time in milliseconds
    #             (RequestPath::QueueTiming: the wait before the app call):
    #             ... 200 6 "-" "curl/7.88.1" "4f1c0e2a" 0.412 0.051
    #   json:     {"time":...,"pid":...,"role":...,"remote_addr":...,"method":...,
    #              "target":...,"protocol":...,"status":200,"bytes":6,"duration_ms":0.412,
    #              "queue_ms":0.051,"referer":null,"user_agent":...,"request_id":...}
    #
    # common stays the Common Log Format as tools read it: no field added.
    #
    # bytes: the body bytes the response writer handed to the connection ("-"
    # / null when unknown: a hijacked or upgraded connection, or a client that
    # left while the body was written).
    #
    # What the request sent is escaped (Log.escape_bytes) before it is
    # printed: a client cannot forge a line, break the JSON, or send terminal
    # escapes to whoever reads the file. Only the fields above are read from
    # the request: never its body, never Authorization or Cookie.
    class AccessLog
      FORMATS = %w[common combined json].freeze
      DASH = "-"
      QUEUE_TIME = "spindle.queue_time" # RequestPath::QueueTiming::TIME

      # log: the server log, whose pid and role JSON lines carry.
      def initialize(sink, format, log)
        @sink = sink
        @format = format
        @log = log
        @clf_second = nil
        @clf_time = nil
      end

      def reopen = @sink.reopen

      # Lines dropped since the process started (Sink#dropped).
      def dropped = @sink.dropped

      def forked = @sink.forked

      # Taken before the app runs: middleware may rewrite PATH_INFO or
      # REQUEST_METHOD (Rack::MethodOverride), and the log says what the client
      # sent. Returns [method, target, protocol].
      def capture(env)
        path = env["PATH_INFO"].to_s
        query = env["QUERY_STRING"].to_s
        target = query.empty? ? path : "#{path}?#{query}"
        [Log.escape_bytes(env["REQUEST_METHOD"].to_s), Log.escape_bytes(target),
         Log.escape_bytes(env["SERVER_PROTOCOL"].to_s)]
      end

      # request: what #capture returned (nil: a request the parser refused,
      # so there is none to show); bytes, seconds: nil when unknown;
      # headers: the app's response headers (nil: none), whose x-request-id
      # names a request that came without one.
      def record(env, request, status, bytes, seconds, headers = nil)
        line = if @format == "json"
                 json(env, request, status, bytes, seconds, headers)
               else
                 text(env, request, status, bytes, seconds, headers)
               end
        @sink.write(line)
      end

      private

      def text(env, request, status, bytes, seconds, headers)
        line = +"#{env['REMOTE_ADDR'] || DASH} - - #{clf_time} " \
                "\"#{request ? request.join(' ') : DASH}\" #{status.to_i} #{bytes || DASH}"
        if @format == "combined"
          line << " \"#{header(env, 'HTTP_REFERER') || DASH}\" \"#{header(env, 'HTTP_USER_AGENT') || DASH}\" " \
                  "\"#{request_id(env, headers) || DASH}\" #{milliseconds(seconds)} #{milliseconds(env[QUEUE_TIME])}"
        end
        line << "\n"
      end

      def json(env, request, status, bytes, seconds, headers)
        method, target, protocol = request
        fields = {
          "time" => LineFormat.timestamp, "pid" => @log.pid, "role" => @log.role,
          "remote_addr" => env["REMOTE_ADDR"], "method" => method, "target" => target, "protocol" => protocol,
          "status" => status.to_i, "bytes" => bytes, "duration_ms" => seconds && (seconds * 1000).round(3),
          "queue_ms" => (queue = env[QUEUE_TIME]) && (queue * 1000).round(3),
          "referer" => header(env, "HTTP_REFERER"), "user_agent" => header(env, "HTTP_USER_AGENT"),
          "request_id" => request_id(env, headers)
        }
        "#{JSON.generate(fields)}\n"
      end

      def milliseconds(seconds) = seconds ? format("%.3f", seconds * 1000) : DASH

      # CLF's time has whole seconds: formatted once a second, not per request.
      # Two threads may both format it at a change of second; either result
      # is right.
      def clf_time
        second = Process.clock_gettime(Process::CLOCK_REALTIME, :second)
        return @clf_time if second == @clf_second

        @clf_time = Time.at(second).utc.strftime("[%d/%b/%Y:%H:%M:%S +0000]")
        @clf_second = second
        @clf_time
      end

      def request_id(env, headers)
        id = RequestName.id(env, headers)
        id && Log.escape_bytes(id)
      end

      def header(env, key)
        value = env[key]
        value && Log.escape_bytes(value)
      end
    end
  end
end
