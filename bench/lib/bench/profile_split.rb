# frozen_string_literal: true

module Bench
  # Where a server process's CPU samples went, from StackProf's raw results
  # (stacks root first, each followed by its count): server code (Spindle's
  # lib/spindle, Rack, and each peer server's own gems), app code (Rails and
  # every other gem, the apps), garbage collection, or other (Ruby's own
  # library with no caller of either kind, e.g. a thread's idle loop).
  # A sample belongs to its innermost frame of a known kind: time in a C
  # method (IO#write) or the standard library (Monitor) counts for the code
  # that called it.
  module ProfileSplit
    SERVER_GEMS = %w[puma falcon async async-container async-http async-pool async-service io-event io-stream
                     protocol-http protocol-http1 protocol-http2 protocol-rack unicorn pitchfork nio4r rack rackup
                     raindrops console fiber-annotation fiber-local fiber-storage traces metrics].freeze
    SERVER = %r{/lib/spindle/|/bin/spindle\z|/gems/(?:#{SERVER_GEMS.map { |g| Regexp.escape(g) }.join('|')})-\d[^/]*/}
    APP = %r{/gems/|/test/apps/|/bench/apps/|/examples/}
    KINDS = %i[server app gc other].freeze
    TOP = 8 # the server frames listed by their own samples

    module_function

    # { samples:, server:, app:, gc:, other: (sample counts), top_server: [[frame, samples]] }
    def split(results)
      frames = results.fetch(:frames)
      counts = KINDS.to_h { |k| [k, 0] }
      server_frames = Hash.new(0)
      each_stack(results.fetch(:raw, [])) do |stack, count|
        kind, frame = classify(stack.map { |id| frames[id] || {} })
        counts[kind] += count
        server_frames[frame] += count if kind == :server
      end
      top = server_frames.sort_by { |name, n| [-n, name] }.first(TOP)
      { samples: counts.values.sum, **counts, top_server: top }
    end

    # raw: [length, frame ids root first..., count, length, ...]
    def each_stack(raw)
      i = 0
      while i < raw.size
        length = raw[i]
        yield raw[i + 1, length], raw[i + 1 + length]
        i += length + 2
      end
    end

    # [kind, the frame that decided it] for one stack (frames root first).
    def classify(stack)
      return [:gc, nil] if stack.last.to_h[:name].to_s.start_with?("(") # (garbage collection), (marking)...

      stack.reverse_each do |frame|
        file = frame[:file].to_s
        return [:server, frame[:name]] if file.match?(SERVER)
        return [:app, frame[:name]] if file.match?(APP)
      end
      [:other, nil]
    end
  end
end
