# frozen_string_literal: true

require "socket"
require "io/wait"
require_relative "child"

module Bench
  # One plain HTTP/1.1 GET to 127.0.0.1 with a deadline, used to tell when a
  # server is ready and that it answers the scenario's request correctly.
  # Nothing here is timed for the results.
  module HttpProbe
    # interim: the statuses of the 1xx responses before the final one (103
    # Early Hints), which a client that understands 1xx skips.
    Response = Struct.new(:status, :headers, :body, :interim, keyword_init: true)

    module_function

    # The response, or nil when nothing complete arrived within timeout.
    def get(host, port, path, timeout: 1.0)
      deadline = Child.now + timeout
      Socket.tcp(host, port, connect_timeout: timeout) do |socket|
        socket.write("GET #{path} HTTP/1.1\r\nHost: #{host}:#{port}\r\nConnection: close\r\n\r\n")
        parse(read_all(socket, deadline))
      end
    rescue SystemCallError, IOError, SocketError
      nil
    end

    def read_all(socket, deadline)
      data = +""
      loop do
        left = deadline - Child.now
        return nil if left <= 0 || !socket.wait_readable(left)

        chunk = socket.read_nonblock(16_384, exception: false)
        return data if chunk.nil? # EOF: the server closed, as asked
        next if chunk == :wait_readable

        data << chunk
      end
    end

    def parse(raw)
      return nil unless raw

      interim = []
      loop do
        head, body = raw.split("\r\n\r\n", 2)
        status = Integer(head.to_s[%r{\AHTTP/1\.[01] (\d{3})}, 1] || (return nil)) # nil: only a 1xx came
        return response(status, head, body, interim) unless status.between?(100, 199) && status != 101

        # An interim response has a head and no body: the final one follows.
        interim << status
        raw = body.to_s
      end
    end

    def response(status, head, body, interim)
      headers = head.lines.drop(1).to_h { |line| line.chomp.split(/:\s*/, 2).then { |k, v| [k.downcase, v.to_s] } }
      body = dechunk(body.to_s) if headers["transfer-encoding"].to_s.include?("chunked")
      Response.new(status: status, headers: headers, body: body.to_s, interim: interim)
    end

    # Why a server's answer to the scenario's request must not be measured,
    # or nil. A 1xx before the response (103 Early Hints from Rails) is one:
    # wrk counts it as a response of its own and sends the next request, so
    # it would inflate the figure (it doubled Spindle's on Rails, issue 16).
    def refusal(response, expect_body)
      if response.status != 200 || (expect_body && response.body != expect_body)
        "answered #{response.status} with #{response.body.bytesize} bytes, not the expected body"
      elsif response.interim.any?
        "sent #{response.interim.join(', ')} before its response: wrk would count each as a response " \
          "(turn early hints off for this scenario)"
      end
    end

    def dechunk(data)
      out = +""
      until data.empty?
        size_line, data = data.split("\r\n", 2)
        size = Integer(size_line.to_s.split(";").first.to_s.strip, 16)
        break if size.zero? || data.nil?

        out << data.byteslice(0, size)
        data = data.byteslice(size + 2..) || ""
      end
      out
    rescue ArgumentError
      out
    end

  end
end
