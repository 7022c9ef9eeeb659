# frozen_string_literal: true

require "spindle/http/parser"
require_relative "framing"

module Differential
  # Spindle's parser driven as the server drives it: execute until the message
  # is done, reset, go on with the bytes that follow; stop at an error, or at
  # the end of a message that does not keep the connection alive.
  module SpindleSide
    module_function

    def frame(bytes)
      parser = Spindle::HTTP::Parser.new
      messages = []
      offset = 0
      while offset < bytes.bytesize
        body = String.new
        offset = parser.execute(bytes, offset, body) until parser.done? || offset == bytes.bytesize
        return Framing.new(messages, :incomplete, nil) unless parser.done?

        messages << message(parser, offset, body)
        return Framing.new(messages, :closed, nil) unless parser.keep_alive? || offset == bytes.bytesize

        parser.reset
      end
      Framing.new(messages, :clean, nil)
    rescue Spindle::HTTP::ParseError => e
      Framing.new(messages, :error, "#{e.status} #{e.message}")
    end

    def message(parser, offset, body)
      env = parser.env
      Framing::Message.new(offset, body, parser.keep_alive?, "#{env['REQUEST_METHOD']} #{env['REQUEST_URI']}")
    end
  end
end
