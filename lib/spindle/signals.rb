# frozen_string_literal: true

module Spindle
  # TERM and INT for a serving process. The trap handlers only write a byte to a
  # pipe (nothing else is safe in a trap); a watcher thread reads it and acts:
  # the first signal calls on_stop, any later one calls on_force.
  class Signals
    STOP_SIGNALS = %w[TERM INT].freeze

    def initialize(log)
      @log = log
      @received = 0
    end

    def on_stop(&block)
      @on_stop = block
      self
    end

    def on_force(&block)
      @on_force = block
      self
    end

    def install
      reader, writer = IO.pipe
      STOP_SIGNALS.each do |name|
        Signal.trap(name) { writer.write_nonblock(".", exception: false) }
      end
      Thread.new { watch(reader) }
      self
    end

    private

    def watch(reader)
      loop do
        reader.read(1)
        @received += 1
        @received == 1 ? @on_stop.call : @on_force.call
      end
    rescue StandardError => e
      @log.exception(e, "signal handling failed")
    end
  end
end
