# frozen_string_literal: true

require "stringio"
require "tempfile"

module Spindle
  module HTTP
    # Collects a request body as the parser decodes it and hands the app a
    # rewindable rack.input. A small body stays in memory. Past the spool
    # threshold it moves to an unlinked tempfile, so a 1 GB upload costs disk,
    # not heap.
    #
    # The spool is this object's from its creation to the end of the request
    # (#release) or of the connection (#discard): the app may read it, replace
    # env["rack.input"], or drop it, and its descriptor and disk space are
    # still given back when the request ends, not at some later GC.
    class Input
      EMPTY = "".b.freeze

      def initialize(threshold)
        @threshold = threshold
        @file = nil # the spool still being written
        @handed = nil # the spool the app got as rack.input
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

        @handed = @file
        @file = nil
        @handed.rewind
        @handed
      end

      # The request is over (its body closed, its rack.response_finished
      # callbacks run): closes the spool the app was given, if any. Closing
      # an unlinked file frees its disk space.
      def release
        return unless @handed

        @handed.close
        @handed = nil
      end

      # The connection is closing: frees a spool that never reached the app
      # (the client went away mid-body) and one that did.
      def discard
        @file&.close
        @file = nil
        release
      end
    end
  end
end
