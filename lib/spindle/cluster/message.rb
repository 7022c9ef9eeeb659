# frozen_string_literal: true

module Spindle
  module Cluster
    # What master, workers and the mold say to each other: one Struct per kind of
    # message, sent whole over a SEQPACKET socketpair (one message per packet, so
    # no framing), never string codes. Marshal is safe here: both ends are the
    # same program, forked from one parent.
    module Message
      # worker → master, every heartbeat: alive, and what it is doing.
      # durations, queue_times: Metrics::DurationHistogram::Snapshots, and
      # shed: requests shed for their queue time (for --metrics).
      # log_lines_dropped: Log#dropped_lines.
      Checkin = Struct.new(:pid, :requests, :in_flight, :oldest_request_age, :backlog, :gc, :durations,
                           :queue_times, :shed, :log_lines_dropped, keyword_init: true)
      # worker → master, first thing after the fork: its pid. A worker forked
      # by a mold has none the master knows of until then, and without one
      # a boot that hangs could be neither asked for its threads nor killed.
      Forked = Struct.new(:pid, keyword_init: true)
      # worker → master, once its engine is serving.
      Booted = Struct.new(:pid, :index, :generation, keyword_init: true)
      # master → worker: stop serving and become the mold of the next generation.
      BecomeMold = Struct.new(:generation, keyword_init: true)
      # mold → master: ready to fork workers.
      MoldReady = Struct.new(:pid, :generation, keyword_init: true)
      # master → mold: fork a worker. Its channel travels with the message as an fd.
      SpawnWorker = Struct.new(:index, :generation, :channel, keyword_init: true)
      # master → worker: the master's drain delay has begun; answer health
      # checks with 503 and close connections after their response, but keep
      # accepting and serving (the master sends TERM or QUIT when it ends).
      LeavePool = Struct.new(:delay, keyword_init: true)
      # master → worker: stop. how: :timed (TERM, INT: drain within
      # --shutdown-timeout), :unlimited (QUIT: drain with no limit), :now
      # (the master's second stop signal: exit at once). A message, not a
      # signal: the worker may have the same signal from the kernel already
      # (a signal to the process group), and two signals read as "stop at
      # once" (Signals).
      Stop = Struct.new(:how, keyword_init: true)
      # master → worker: run a full GC now (spindlectl gc).
      RunGC = Struct.new(:reason, keyword_init: true)
      # worker → master: the thread dump it was asked for (URG) is in the
      # log; the master need not wait longer before its KILL.
      Dumped = Struct.new(:pid, keyword_init: true)

      MAX_BYTES = 64 * 1024

      module_function

      # Sends message; an IO in it (SpawnWorker#channel) goes along as an fd.
      def send_to(socket, message)
        io = message.respond_to?(:channel) ? message.channel : nil
        payload = Marshal.dump(io ? message.dup.tap { |m| m.channel = nil } : message)
        if io
          socket.sendmsg(payload, 0, nil, Socket::AncillaryData.unix_rights(io))
        else
          socket.sendmsg(payload)
        end
        true
      rescue Errno::EPIPE, Errno::ECONNREFUSED, Errno::ECONNRESET, IOError
        false
      end

      # The next message, waiting for it; nil at end of stream.
      def receive(socket)
        decode(socket.recvmsg(MAX_BYTES, 0, nil, scm_rights: true))
      rescue Errno::ECONNRESET, IOError
        nil
      end

      # The next message, :wait when none is ready, nil at end of stream.
      def receive_nonblock(socket)
        received = socket.recvmsg_nonblock(MAX_BYTES, 0, nil, scm_rights: true, exception: false)
        return :wait if received == :wait_readable

        decode(received)
      rescue Errno::ECONNRESET, IOError
        nil
      end

      # received: recvmsg's [data, addr, flags, *controls]. At end of stream
      # Ruby 3.1 gives an empty data String and Ruby 3.3 gives nil instead of
      # the Array: both mean the peer is gone. (Splatting 3.3's nil into
      # decode raised ArgumentError and killed the master.)
      def decode(received)
        data, _addr, _flags, *controls = received
        return nil if data.nil? || data.empty?

        message = Marshal.load(data) # rubocop:disable Security/MarshalLoad -- our own forked processes
        rights = controls.find { |c| c.cmsg_is?(:SOCKET, :RIGHTS) }
        message.channel = rights.unix_rights.first if rights && message.respond_to?(:channel=)
        message
      end
    end
  end
end
