# frozen_string_literal: true

require_relative "output_budget"
require_relative "../http/file_body"

module Spindle
  module Engine
    # A connection's response bytes on their way to the client, and the ones
    # the client has not taken yet, in order. Every engine builds one per
    # connection; they differ in who finishes a response a slow reader has
    # not taken: the selector engines watch the socket for room (#flush_nonblock,
    # from Selection), so a slow reader holds memory, never a thread; the fiber
    # engines' fiber waits for the client once the whole body is handed over
    # (#finish). Either way every byte waiting here is counted in the
    # process's OutputBudget, which holds back new app calls while it is spent.
    #
    # A file body waits here as an HTTP::FileBody (the open file and how much
    # of it is owed), not as bytes: it counts FileBody::COST in the budget,
    # and goes out with sendfile(2) as the socket takes it.
    class Outbox
      class WriteTimeout < StandardError; end

      # Output generated while writing (stream chunks, heads) that may wait
      # here for a slow reader; more than this and the writer waits instead.
      LIMIT = 64 * 1024
      # What a write to a client that is gone raises.
      WRITE_FAILURES = [Errno::EPIPE, Errno::ECONNRESET, Errno::ENOTCONN, Errno::ETIMEDOUT, IOError].freeze
      # The same, or a client that read nothing for write_timeout: what a
      # blocking write (a response, a 408) rescues before closing the
      # connection. The one list: the handler and its Write step rescue it too.
      CLIENT_GONE = [*WRITE_FAILURES, WriteTimeout].freeze

      # budget: the process's OutputBudget, given by the engine (nil: the
      # one OutputBudget.for config, fetched once output waits).
      def initialize(io, config, budget = nil)
        @io = io
        @config = config
        @write_timeout = config.write_timeout
        @budget = budget
        @chunks = nil # what the client has not taken yet
        @own = 0 # bytes in it that only the outbox keeps (not held)
        @bytes = 0 # bytes in it, as counted in the budget
      end

      # Writes data, or keeps what the socket will not take yet. held means
      # data is part of a body the app already holds in memory, so keeping it
      # costs nothing more: it always may wait here. Other output waits here
      # only up to LIMIT; beyond it, this waits for the client, at most
      # write_timeout at a time.
      def write(data, held = false)
        return write_behind(data, held) if @chunks

        written = @io.write_nonblock(data, exception: false)
        return if written == data.bytesize

        rest = written == :wait_writable ? data : data.byteslice(written, data.bytesize - written)
        held || rest.bytesize <= LIMIT ? hold(rest, held) : write_all(rest)
      end

      # Sends length bytes of file (open, at its first byte to send; the
      # outbox closes it) after what waits here. What the socket does not
      # take now waits as the file itself: nobody waits for the client here.
      def write_file(file, length)
        body = HTTP::FileBody.new(file, length)
        return if @chunks.nil? && body.send_nonblock(@io) == :done

        (@chunks ||= []) << body
        @bytes += HTTP::FileBody::COST
        budget.take(HTTP::FileBody::COST)
        nil
      rescue StandardError
        body.close
        raise
      end

      # Writes all of data now, waiting for the client at most write_timeout
      # at a time. Only while nothing waits here (what waits would go after it).
      def write_all(data)
        loop do
          written = @io.write_nonblock(data, exception: false)
          if written == :wait_writable
            wait_for_reader
          elsif written == data.bytesize
            return
          else
            data = data.byteslice(written, data.bytesize - written)
          end
        end
      end

      # True while part of a response waits for the client.
      def pending? = !@chunks.nil?

      # Writes what waits without waiting: :done, :wait, or :eof when the
      # client is gone.
      def flush_nonblock
        flush_step
      rescue *WRITE_FAILURES
        :eof
      end

      # Empties the outbox, waiting at most write_timeout at a time for the
      # client: before the socket itself goes to code that writes to it.
      def flush
        wait_for_reader while flush_step == :wait
      end

      # The fiber engines' end of a response: waits for the client to take
      # what waits here. False when it could not (the client is gone, read
      # nothing for write_timeout, or the fiber was stopped mid-wait): the
      # rest can never be sent, so the caller closes the connection.
      def finish = @chunks ? write_rest : true

      # What waits here will never be sent (the connection closes): its bytes
      # no longer count in the budget.
      def drop
        release(@bytes) if @bytes.positive?
        @chunks&.each { |chunk| chunk.close if chunk.is_a?(HTTP::FileBody) }
        @chunks = nil
        @own = 0
      end

      private

      # Apart from #finish: a return in a method with rescue or ensure costs
      # an object per call (Ruby 3.1), and #finish runs once per request.
      def write_rest
        done = false
        flush
        done = true
      rescue WriteTimeout, *WRITE_FAILURES
        false
      ensure
        drop unless done
      end

      def wait_for_reader
        raise WriteTimeout, "client read nothing for #{@write_timeout}s" unless @io.wait_writable(@write_timeout)
      end

      def write_behind(data, held)
        return hold(data, held) if held || @own + data.bytesize <= LIMIT

        flush
        write_all(data)
      end

      # A copy that shares the bytes: the app may reuse its buffer after this.
      def hold(data, held)
        (@chunks ||= []) << (data.frozen? ? data : data.dup)
        @own += data.bytesize unless held
        @bytes += data.bytesize
        budget.take(data.bytesize)
        nil
      end

      def budget = @budget ||= OutputBudget.for(@config)

      def flush_step
        sent = 0
        while (data = @chunks&.first)
          if data.is_a?(HTTP::FileBody)
            return :wait if data.send_nonblock(@io) == :wait

            @chunks.shift
            sent += HTTP::FileBody::COST
            next
          end
          written = @io.write_nonblock(data, exception: false)
          return :wait if written == :wait_writable

          sent += written
          written == data.bytesize ? @chunks.shift : @chunks[0] = data.byteslice(written, data.bytesize - written)
        end
        @chunks = nil
        @own = 0
        :done
      ensure
        release(sent) if sent.positive?
      end

      # The client took bytes: they no longer count.
      def release(bytes)
        @bytes -= bytes
        budget.give(bytes)
      end
    end
  end
end
