# frozen_string_literal: true

module Spindle
  # How a server that cannot start says so: one line on stderr, never a
  # backtrace, and exit status 2 (docs/CONFIG.md, "Exit status"). bin/spindle
  # owns its process. Under rackup and `rails server` the handler runs in
  # theirs, which it owns as well when it runs on the main thread: nothing
  # else is left to do there once the server cannot start. A server run on
  # another thread (a test harness that embeds it) is someone else's process:
  # the exception goes to them.
  module StartupFailure
    STATUS = 2

    module_function

    # The error's first line, "spindle: " once (some messages carry it).
    def line(error)
      "spindle: #{error.message.lines.first.to_s.chomp.delete_prefix('spindle: ')}"
    end

    def exit_or_raise(error)
      raise error unless Thread.current == Thread.main

      warn line(error)
      exit STATUS
    end
  end
end
