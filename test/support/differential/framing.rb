# frozen_string_literal: true

module Differential
  # What a parser made of one stream of bytes on one connection: the messages
  # it completed (where each ended, its decoded body, whether the connection
  # may carry another) and how the stream ended: :clean (at a message
  # boundary), :incomplete (inside a message), :error (refused), :closed
  # (bytes after a message that closes the connection) or :upgrade (bytes
  # after an upgrade request, which belong to the new protocol).
  Framing = Struct.new(:messages, :tail, :error) do
    def accepted = messages.size

    def describe
      list = messages.map { |m| "#{m.request_line}[end #{m.end} body #{m.body.bytesize}B ka=#{m.keep_alive}]" }
      "#{list.join(' ')} #{tail}#{" (#{error})" if error}"
    end
  end

  Framing::Message = Struct.new(:end, :body, :keep_alive, :request_line) do
    # What must agree between two parsers: the request line only says which
    # request this was (and the two spell the method differently on error).
    def framing = [self.end, body, keep_alive]
  end
end
