# frozen_string_literal: true

module Bench
  # Progress lines on stderr, so stdout stays free for whatever calls us.
  module Log
    module_function

    def info(message)
      $stderr.puts "[bench #{Time.now.strftime('%H:%M:%S')}] #{message}"
    end

    def warn(message)
      info("WARNING: #{message}")
    end
  end
end
