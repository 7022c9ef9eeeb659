# frozen_string_literal: true

require_relative "message"

module Spindle
  module Cluster
    # A worker's side of its channel, on a thread of its own: a check-in every
    # interval, and each order the master sent, read and obeyed as it comes.
    #
    # It ends only between two orders (#stop). It used to be killed once the
    # worker's server returned, and a kill that landed after an order was
    # read and before it was obeyed lost it: a stop order read just as the
    # worker finished draining to become the mold was dropped, the worker
    # became the mold, and the stopping master waited for it for ever. Now an
    # order read is obeyed in full, and one not read yet stays in the channel
    # for whoever reads it next (the mold obeys a stop there too).
    class Heartbeat
      INTERVAL = 1.0
      # The longest #stop waits: a check-in blocked on a master that reads
      # nothing would otherwise hold the worker's exit for ever.
      STOP_LIMIT = 5.0

      # checkin: makes the next Message::Checkin; obey: takes each message read
      # (nil when the master closed the channel); gone: called when a
      # check-in cannot be sent (the master is gone).
      def initialize(channel, log:, checkin:, obey:, gone:, interval: INTERVAL)
        @channel = channel
        @log = log
        @checkin = checkin
        @obey = obey
        @gone = gone
        @interval = interval
        @stop_r, @stop_w = IO.pipe
      end

      def start
        @thread = Thread.new { run }
        self
      end

      # Returns once the thread has ended: at once while it waits, or after
      # the order it is obeying. Past STOP_LIMIT it is killed.
      def stop
        @stop_w.write_nonblock(".", exception: false)
        @thread&.join(STOP_LIMIT) || @thread&.kill
        [@stop_r, @stop_w].each(&:close)
      end

      private

      def run
        until stopped?
          Message.send_to(@channel, @checkin.call) || @gone.call
          ready = IO.select([@channel, @stop_r], nil, nil, @interval)&.first
          obey_pending if ready&.include?(@channel) && !ready.include?(@stop_r)
        end
      rescue StandardError => e
        @log.exception(e, "heartbeat failed")
      end

      def obey_pending
        message = Message.receive_nonblock(@channel)
        @obey.call(message) unless message == :wait
      end

      def stopped? = @stop_r.wait_readable(0)
    end
  end
end
