# frozen_string_literal: true

require_relative "lingering_close"

module Spindle
  module Engine
    # The one way an engine closes a connection: #retire, with the reason,
    # from whatever holds it. Each reason to close is named here once, and
    # what it means for the client (a close that lingers or one at once) is
    # decided here once, for both engine families. It holds no connection
    # itself: they are in their holders' tables, as below.
    #
    # A reason says whether the client may still be sending, and so how the
    # connection ends:
    #
    #   done          the response said "connection: close" (the app, the
    #                 keep-alive limit, a drain)              lingers
    #   refused       an error answer (400, 408, 413, 431 ...) to a request
    #                 whose rest may be on its way            lingers
    #   deadline      idle past its keep-alive deadline, or owed a response
    #                 the client did not take in time         closes now
    #   idle_draining idle while the process drains           closes now
    #   evicted       idle, at the cap, for a new client      closes now
    #   no_fds        out of file descriptors: the longest idle goes
    #                                                          closes now
    #   write_failed  the client is gone mid-response         closes now
    #   client_closed end of stream from the client           closes now
    #   bad_proxy_header no valid PROXY header: no HTTP is answered
    #                                                          closes now
    #   failed        an error in the engine (logged)         closes now
    #   stopped       the engine ends with it still open      closes now
    #
    # Where the client may still be sending, the rest of the output goes out
    # first, then the close lingers (LingeringClose) so a reset does not
    # discard the responses just written. Both depend on what holds the
    # connection, which answers:
    #
    #   owe(conn)     conn's output is to go out before it closes: true once
    #                 it is out (the caller's fiber wrote it), false when
    #                 the holder writes it later and retires conn then (or
    #                 the client is gone, and the holder closed it)
    #   linger(conn)  conn's close lingers: the holder drops its input until
    #                 LingeringClose says :close or its deadline passes
    #
    # The selector engines' Selection holds them in epoll, a threads pool
    # thread hands them to the reactor (its Mailbox), a FiberLoop keeps them
    # in the connection's own fiber.
    module Connections
      LINGERING = { done: true, refused: true }.freeze
      AT_ONCE = %i[deadline idle_draining evicted no_fds write_failed client_closed bad_proxy_header failed
                   stopped].freeze
      REASONS = (LINGERING.keys + AT_ONCE).freeze

      module_function

      # The client may still be sending when a connection closes for reason.
      def lingers?(reason) = LINGERING.key?(reason)

      # Ends conn for reason, held by holder (see above). False: conn reads
      # no request any more.
      def retire(conn, reason, holder)
        return close(conn, reason) unless LINGERING.key?(reason)
        return false if conn.outbox.pending? && !holder.owe(conn)
        return close(conn, reason) unless conn.lingering? || LingeringClose.start(conn) == :linger

        holder.linger(conn)
        false
      end

      # Closes conn now: every connection (or accepted socket) an engine
      # closes is closed here, and reason names why (see above). False, as
      # #retire.
      def close(conn, _reason)
        conn.close
        false
      end
    end
  end
end
