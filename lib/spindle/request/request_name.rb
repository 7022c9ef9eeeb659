# frozen_string_literal: true

module Spindle
  # How the logs name a request, so that a line about it can be found in the
  # app's own log and in the access log.
  #
  # Its id is the request's X-Request-Id (the client's or a proxy's), else
  # the x-request-id of the app's response: Rails' RequestId middleware
  # makes one when the request had none, and its log lines carry it.
  #
  # Its method and path are SCRIPT_NAME + PATH_INFO (a mounted app,
  # Rack::URLMap, moves the mount point into SCRIPT_NAME while it runs),
  # never the query, whose values may be secrets (tokens, e-mail addresses).
  module RequestName
    HEADER = "HTTP_X_REQUEST_ID"
    RESPONSE_HEADER = "x-request-id"

    module_function

    # The request's id as it came (network bytes: escape before printing),
    # or nil. headers: the app's response headers, nil when there are none
    # (the app raised, the connection was hijacked).
    def id(env, headers = nil)
      env[HEADER] || (headers.is_a?(Hash) ? response_id(headers) : nil)
    end

    # "GET /orders/7", escaped.
    def method_and_path(env)
      "#{Log.escape(env['REQUEST_METHOD'].to_s)} #{Log.escape("#{env['SCRIPT_NAME']}#{env['PATH_INFO']}")}"
    end

    # "GET /orders/7 (request id 4f1c0e2a)", escaped: what an app error line
    # says the request was.
    def for_log(env, headers = nil)
      id = id(env, headers)
      "#{method_and_path(env)} (#{id ? "request id #{Log.escape(id)}" : 'no request id'})"
    end

    # Rack 3 names response headers in lower case; a Rack 2 app may not
    # (Rails before 7.1 sends "X-Request-Id"). Rack allows an Array value.
    def response_id(headers)
      value = headers[RESPONSE_HEADER] ||
              headers.find { |name, _| name.is_a?(String) && name.casecmp?(RESPONSE_HEADER) }&.last
      value = value.first if value.is_a?(Array)
      value.is_a?(String) && !value.empty? ? value : nil
    end
  end
end
