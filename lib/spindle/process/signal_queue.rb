# frozen_string_literal: true

module Spindle
  # How every Spindle process takes signals: the master, a worker, and a
  # process serving alone. A trap handler only appends the signal's name to a
  # list and writes a byte to a pipe. Ruby runs a handler on the main thread
  # between two of its instructions, maybe while that thread holds a lock (the
  # logger's, an engine's): taking a lock there, or doing the work itself,
  # could deadlock or act on half-done state.
  #
  # One reader acts on what was queued, in arrival order, outside any trap:
  # the master's loop (it selects on #reader), or, where the main thread
  # serves requests, a watcher thread (#watch). The roles differ only in what
  # each signal does (Signals::SINGLE, Signals::WORKER, Cluster::Master#dispatch).
  class SignalQueue
    attr_reader :reader

    def initialize
      @pending = []
      @reader, @writer = IO.pipe
    end

    # Signal names (Symbols) whose handler queues them.
    def trap(names)
      names.each { |name| Signal.trap(name) { push(name) } }
      self
    end

    # item: a signal name, or anything a thread hands the reader (the master's
    # control commands). Appending before writing the byte means a reader woken
    # by the byte always finds the item; a full pipe drops the byte, not the item.
    def push(item)
      @pending << item
      @writer.write_nonblock(".", exception: false)
    end

    # Everything queued so far, oldest first; never blocks.
    def drain
      @reader.read_nonblock(4096, exception: false)
      items = []
      items << @pending.shift until @pending.empty?
      items
    end

    # Yields every item, on a thread of its own, for the life of the process.
    def watch
      Thread.new do
        loop do
          @reader.wait_readable
          drain.each { |item| yield item }
        end
      end
    end
  end
end
