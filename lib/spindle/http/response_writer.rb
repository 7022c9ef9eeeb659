# frozen_string_literal: true

require "rack/utils"
require_relative "date_header"
require_relative "header_lines"
require_relative "parser" # the C extension, which holds ResponseHead
require_relative "../log"
require_relative "../request/request_name"

module Spindle
  module HTTP
    # Raised for a response the app returned that cannot be written as given (bad
    # status, a body Rack does not allow, a body part that is not a String).
    # Before the head is sent it becomes a 500; after, the connection is closed.
    class InvalidResponse < StandardError; end

    # Writes one Rack response to a connection and says whether the connection can
    # carry another request: :keep_alive, :close or :hijacked.
    #
    # Framing is the server's job, never the app's. Content-Length when the size is
    # known (declared, an Array body, a file); chunked when it is not, on HTTP/1.1;
    # close-delimited on HTTP/1.0. HEAD, 1xx, 204, 205 and 304 never carry a body.
    #
    # A 101 hands the connection over: to the rack.hijack header's callable, or
    # to a streaming body, which runs for as long as the upgraded protocol talks.
    # Any other 1xx is not a final status and is refused: the client would wait
    # on for the real response and take the next one as this one's.
    #
    # The common response (plain String fields; an Array body of Strings, or
    # what to_ary returns when no length is declared, under 64 KiB) is
    # written by ResponseHead, in C, in one pass; it hands back anything this
    # class would have to judge, so the rules below are the only ones.
    class ResponseWriter
      COALESCE_LIMIT = ResponseHead::COALESCE_LIMIT # 64 KiB: the most one write carries
      LAST_CHUNK = "0\r\n\r\n"
      CHUNKED_LINE = "transfer-encoding: chunked\r\n"
      UPGRADE_LINE = "connection: upgrade\r\n"
      NO_CONTENT_LINE = "content-length: 0\r\n"
      # How a head ends: the connection field when one is due, the blank line.
      KEEP_ALIVE_ENDING = "connection: keep-alive\r\n\r\n"
      CLOSE_ENDING = "connection: close\r\n\r\n"
      HEAD = "HEAD"
      CONTENT_LENGTH = "content-length"
      HIJACK = "rack.hijack"
      # Content-Length values up to 16 KiB, formatted once: most bodies are small.
      LENGTHS = Array.new(16_385) { |n| n.to_s.freeze }.freeze
      HTTP_1_0 = "HTTP/1.0"
      SWITCHING_PROTOCOLS = 101
      RESET_CONTENT = 205
      # How much of an invalid body a log line shows.
      SHOWN = 60
      # The env key where the body bytes sent are left for the access log.
      BODY_BYTES = "spindle.body_bytes"

      # log: where dropped response headers are reported (nil: nowhere, for
      # tests that only look at the bytes). count_bytes: leave the body bytes
      # sent in env[BODY_BYTES] (the access log is on); off, a request pays
      # nothing for it.
      def initialize(log = nil, count_bytes: false)
        @log = log
        @count_bytes = count_bytes
        @status_lines = Hash.new do |cache, status|
          reason = Rack::Utils::HTTP_STATUS_CODES.fetch(status, "Status #{status}")
          cache[status] = "HTTP/1.1 #{status} #{reason}\r\n".b.freeze # a binary head: Octets
        end
        @date = DateHeader.new
      end

      # Response is [status, headers, body]; keep_alive is what the request and the
      # server allow. Does not close the body: the handler always does.
      def write(conn, env, status, headers, body, keep_alive)
        status = check_status(status)
        head = +@status_lines[status]
        if with_content?(env, status) && (parts = in_memory(body, headers))
          outcome = write_rendered(conn, env, head, headers, parts, keep_alive)
          return outcome if outcome

          body = parts # to_ary is called once: Rack::Lint's closes the body
        end
        write_judged(conn, env, status, head, headers, body, keep_alive)
      end

      # A response the server makes itself (errors): always closes the connection.
      def write_simple(conn, status, text)
        head = +@status_lines[status]
        head << @date.line << "content-type: text/plain\r\ncontent-length: " << text.bytesize.to_s << "\r\n"
        head << CLOSE_ENDING << text
        conn.write(head)
      end

      # rack.early_hints: a 103 with the given headers, for HTTP/1.1 clients only.
      def write_early_hints(conn, env, headers)
        return if env["SERVER_PROTOCOL"] == HTTP_1_0

        head = +@status_lines[103]
        lines = HeaderLines.new(head, headers, 103)
        report(lines.problems, env, headers) if lines.problems
        conn.write(head << "\r\n")
      end

      private

      # Everything ResponseHead hands back: each rule checked here, each
      # problem reported.
      def write_judged(conn, env, status, head, headers, body, keep_alive)
        check_headers(headers) unless headers.is_a?(Hash) # the common case costs no call
        lines = HeaderLines.new(head, headers, status)
        report(lines.problems, env, headers) if lines.problems
        head << @date.line unless lines.date
        return write_upgrade(conn, env, head, lines, body) if status == SWITCHING_PROTOCOLS
        return write_partial_hijack(conn, head, lines.hijack) if lines.hijack

        check_body(body) unless body.is_a?(Array)
        if env["REQUEST_METHOD"] == HEAD || (status != 200 && bodyless?(status)) # a 200 asks nothing more
          return write_bodyless(conn, env, head, status, keep_alive)
        end

        write_with_body(conn, env, head, lines, body, keep_alive)
      end

      # 101 is the one 1xx an app may answer with (an upgrade, see #write_upgrade).
      def check_status(status)
        code = status.is_a?(Integer) ? status : Integer(status, exception: false)
        raise InvalidResponse, "invalid status #{status.inspect}" unless code && code >= 100 && code <= 599
        if code < 200 && code != SWITCHING_PROTOCOLS
          raise InvalidResponse, "status #{code} is informational, not a final status; send 1xx hints with " \
                                 "rack.early_hints"
        end

        code
      end

      def check_headers(headers)
        return if headers.respond_to?(:each)

        raise InvalidResponse, "the headers are #{headers.class}; Rack requires a Hash"
      end

      # Checked before the head goes out, so that the client gets a 500 and not a
      # 200 with a body cut short.
      def check_body(body)
        return if body.respond_to?(:each) || body.respond_to?(:call)

        shown = body.inspect
        shown = "#{shown[0, SHOWN]}..." if shown.size > SHOWN
        raise InvalidResponse, "the body is #{body.class} #{shown}; Rack requires a body that responds to #each " \
                               "or #call (wrap a String in an Array)"
      end

      # Rack SPEC: every body part is a String. Checked as each part comes, so
      # that an Array body's bad part is found before its head goes out; the
      # callers test is_a?(String) inline and call this for any other part.
      def refuse_part(part)
        raise InvalidResponse, "body part is a #{part.class}, not a String"
      end

      def report(problems, env, headers)
        return unless @log

        problems.each { |problem| @log.error("app response to #{RequestName.for_log(env, headers)}: #{problem}; not sent") }
      end

      def bodyless?(status) = status < 200 || status == 204 || status == RESET_CONTENT || status == 304

      # RFC 9110 §15.3.6: a 205 has no content, and says so with a zero length
      # (not a missing one, which a client could take as "read to close").
      def write_bodyless(conn, env, head, status, keep_alive)
        head << NO_CONTENT_LINE if status == RESET_CONTENT
        finish_head(head, keep_alive, env)
        conn.write(head)
        env[BODY_BYTES] = 0 if @count_bytes
        keep_alive ? :keep_alive : :close
      end

      # The blank line that ends a head, after the connection field when one
      # is due (#finish_head's, and ResponseHead's).
      def ending(keep_alive, env)
        return CLOSE_ENDING unless keep_alive

        env["SERVER_PROTOCOL"] == HTTP_1_0 ? KEEP_ALIVE_ENDING : "\r\n"
      end

      # An Array body, or what to_ary makes of one (Rails' bodies); nil for
      # any other body. A body with a declared length, or beside a partial
      # hijack, is not asked for to_ary: #write_declared sends it with each,
      # and Rack::Lint inside Rack::Lint (rackup's, around an app's own)
      # cannot take both, since the inner one's to_ary closes it.
      def in_memory(body, headers)
        return body if body.is_a?(Array)
        return unless body.respond_to?(:to_ary) && headers.is_a?(Hash)
        return if headers.key?(CONTENT_LENGTH) || headers.key?(HIJACK)

        parts = body.to_ary
        raise InvalidResponse, "the body's to_ary returned #{parts.class}, not an Array" unless parts.is_a?(Array)

        parts
      end

      def with_content?(env, status) = env["REQUEST_METHOD"] != HEAD && (status == 200 || !bodyless?(status))

      # The whole response rendered in C, in one write; nil when ResponseHead
      # leaves it to #write_judged.
      def write_rendered(conn, env, head, headers, parts, keep_alive)
        sent = ResponseHead.render(head, headers, parts, @date.line, ending(keep_alive, env))
        return unless sent

        conn.write(head)
        env[BODY_BYTES] = sent if @count_bytes
        keep_alive ? :keep_alive : :close
      end

      def finish_head(head, keep_alive, env) = head << ending(keep_alive, env)

      def write_with_body(conn, env, head, lines, body, keep_alive)
        keep_alive &&= !lines.close
        if lines.content_length
          write_declared(conn, env, head, lines.content_length, body, keep_alive)
        elsif body.respond_to?(:to_ary)
          write_array(conn, env, head, body.to_ary, keep_alive)
        elsif body.respond_to?(:to_path) && body.respond_to?(:each)
          write_file(conn, env, head, body.to_path, keep_alive)
        elsif body.respond_to?(:each)
          write_stream(conn, env, head, body, keep_alive)
        else
          write_streaming_body(conn, head, body)
        end
      end

      # The app declared Content-Length: trust it, but count. A body that sends
      # more or less than it declared would desynchronise the next response, so
      # the connection is closed instead.
      def write_declared(conn, env, head, length, body, keep_alive)
        finish_head(head, keep_alive, env)
        in_memory = body.respond_to?(:to_ary)
        sent = if body.respond_to?(:to_path) && !in_memory
                 send_file(conn, head, body.to_path, length)
               else
                 send_parts(conn, head, body, in_memory)
               end
        env[BODY_BYTES] = sent if @count_bytes
        sent == length && keep_alive ? :keep_alive : :close
      end

      def write_array(conn, env, head, parts, keep_alive)
        length = 0
        parts.each do |part|
          refuse_part(part) unless part.is_a?(String)
          length += part.bytesize
        end
        head << "content-length: " << (LENGTHS[length] || length.to_s) << "\r\n"
        finish_head(head, keep_alive, env)
        send_parts(conn, head, parts, true, checked: true)
        env[BODY_BYTES] = length if @count_bytes
        keep_alive ? :keep_alive : :close
      end

      # Small responses go out in one write: one syscall, one TCP segment.
      # held: the parts are already in memory (an Array body), so a slow client
      # may keep them waiting in the connection's outbox whatever their size.
      # checked: every part is known to be a String (#write_array looked).
      def send_parts(conn, head, parts, held, checked: false)
        sent = 0
        parts.each do |part|
          refuse_part(part) unless checked || part.is_a?(String)
          sent += part.bytesize
          if head && head.bytesize + part.bytesize <= COALESCE_LIMIT
            head << Octets.of(part)
          else
            if head
              conn.write(head)
              head = nil
            end
            conn.write(part, held)
          end
        end
        conn.write(head) if head
        sent
      end

      # A small file is read and goes out with the head, in one write. A
      # larger one goes out with sendfile(2) from the file, never through
      # Ruby strings; what the socket does not take at once waits in the
      # outbox as the open file (HTTP::FileBody), so a slow reader holds
      # neither a thread nor the file's size in memory. Returns the bytes
      # sent or handed to the outbox (a file that turns out shorter closes
      # the connection then: HTTP::FileBody::Truncated).
      def send_file(conn, head, path, length)
        file = File.open(path, "rb")
        return send_small_file(conn, head, file, length) if length <= COALESCE_LIMIT

        conn.write(head)
        conn.outbox.write_file(file, length) # the outbox closes the file
        file = nil
        length
      ensure
        file&.close
      end

      def send_small_file(conn, head, file, length)
        part = file.read(length) || ""
        conn.write(head << part)
        part.bytesize
      end

      # A file body whose app declared no length (Rails' send_file): the
      # file's size is the length.
      def write_file(conn, env, head, path, keep_alive)
        length = File.size(path)
        head << "content-length: " << (LENGTHS[length] || length.to_s) << "\r\n"
        finish_head(head, keep_alive, env)
        sent = send_file(conn, head, path, length)
        env[BODY_BYTES] = sent if @count_bytes
        sent == length && keep_alive ? :keep_alive : :close
      end

      # Size unknown: chunked on HTTP/1.1, close-delimited on HTTP/1.0.
      def write_stream(conn, env, head, body, keep_alive)
        return write_close_delimited(conn, env, head, body) if env["SERVER_PROTOCOL"] == HTTP_1_0

        head << CHUNKED_LINE
        finish_head(head, keep_alive, env)
        # The head waits for the first chunk: one write instead of two, and a body
        # that raises before producing anything can still become a 500.
        pending = head
        sent = 0
        body.each do |part|
          refuse_part(part) unless part.is_a?(String)
          next if part.empty? # an empty chunk would end the body

          conn.write(pending ? pending << Octets.of(chunk(part)) : chunk(part))
          pending = nil
          sent += part.bytesize
        end
        conn.write(pending ? pending << LAST_CHUNK : LAST_CHUNK)
        env[BODY_BYTES] = sent if @count_bytes
        keep_alive ? :keep_alive : :close
      end

      def chunk(part)
        "#{part.bytesize.to_s(16)}\r\n#{part}\r\n"
      end

      def write_close_delimited(conn, env, head, body)
        conn.write(head << CLOSE_ENDING)
        sent = 0
        body.each do |part|
          refuse_part(part) unless part.is_a?(String)
          conn.write(part)
          sent += part.bytesize
        end
        env[BODY_BYTES] = sent if @count_bytes
        :close
      end

      # Rack 3 streaming body: it gets the socket and writes what it likes; the
      # connection ends with it.
      def write_streaming_body(conn, head, body)
        conn.write(head << CLOSE_ENDING)
        conn.flush
        body.call(conn.io)
        :close
      end

      def write_partial_hijack(conn, head, hijack)
        conn.write(head << "\r\n")
        hijack.call(conn.hand_over)
        :hijacked
      end

      # A 101 (RFC 9110 §15.2.2): the connection stops being HTTP once the head
      # is out. It must be an answer to a request that asked for an upgrade, say
      # which protocol follows, and name someone to speak it: the rack.hijack
      # header's callable (which then owns the socket) or a streaming body (which
      # runs to the end of the upgraded connection; then the server closes it).
      # Either way the engine stops parsing the connection: :hijacked or :close.
      def write_upgrade(conn, env, head, lines, body)
        check_upgrade(env, lines, body)
        head << UPGRADE_LINE unless lines.connection_upgrade
        return write_partial_hijack(conn, head, lines.hijack) if lines.hijack

        conn.write(head << "\r\n")
        conn.flush
        body.call(conn.io)
        :close
      end

      def check_upgrade(env, lines, body)
        problem = if env["SERVER_PROTOCOL"] == HTTP_1_0 || !env["HTTP_UPGRADE"]
                    "the request did not ask for an upgrade"
                  elsif !lines.upgrade
                    "it has no upgrade header naming the protocol"
                  elsif !lines.hijack && (body.respond_to?(:each) || !body.respond_to?(:call))
                    "nothing takes the connection over: return a rack.hijack header or a streaming body"
                  end
        raise InvalidResponse, "status 101 but #{problem}" if problem
      end
    end
  end
end
