# frozen_string_literal: true

require "stringio"
require "tempfile"

module Spindle
  module HTTP
    # Collects a request body as the parser decodes it and hands the app a
    # rewindable rack.input. A small body stays in memory. Past the spool
    # threshold it moves to an unlinked tempfile, so a 1 GB upload costs disk,
    # not heap.
    class Input
      EMPTY = "".b.freeze

      def initialize(threshold)
        @threshold = threshold
        @file = nil
        @empty = nil
      end

      # Takes the bytes in buffer (decoded body) and empties it.
      def drain(buffer)
        return if buffer.empty?

        if @file
          @file.write(buffer)
        elsif buffer.bytesize > @threshold
          @file = Tempfile.create("spindle-body")
          File.unlink(@file.path)
          @file.binmode
          @file.write(buffer)
        else
          return
        end
        buffer.clear
      end

      # The rack.input for the request. Whatever is still in buffer is the body.
      #
      # Bodiless requests on a connection share one read-only, rewound StringIO
      # over a frozen empty string: nothing can be written to it, so nothing one
      # request does to it is visible to the next but a closed state, which is
      # replaced. (Inline: most requests take this path.)
      def finish(buffer)
        drain(buffer) if @file
        if buffer.empty? && !@file
          @empty = StringIO.new(EMPTY) if @empty.nil? || @empty.closed?
          @empty.rewind
          return @empty
        end
        return StringIO.new(buffer.dup) unless @file

        file = @file
        @file = nil
        file.rewind
        file
      end

      # Frees a tempfile that never reached the app (the client went away).
      def discard
        @file&.close
        @file = nil
      end
    end
  end
end
