# frozen_string_literal: true

require_relative "../engine"
require_relative "../http/forwarded"

module Spindle
  class Config
    # Raised for a configuration value that cannot be used; the CLI prints the
    # message as one line and exits non-zero.
    class Error < StandardError; end

    # Coercions shared by option definitions. Each takes what the CLI or the DSL
    # was given and returns the value, or raises Config::Error saying why not.
    module Coerce
      module_function

      # Engine.check knows the names; a refusal reads like any other option's.
      def engine(raw)
        Engine.check(raw)
      rescue Engine::UnknownEngine => e
        raise Error, e.message
      end

      # --sidecar CMD (repeatable) or the DSL's `sidecar CMD, name: NAME`:
      # a list of { name:, command: }. A name left out is the command's first
      # word's base name (bin/jobs: "jobs").
      def sidecars(raw)
        Array(raw).map do |entry|
          entry = { command: entry } unless entry.is_a?(Hash)
          command = entry[:command].to_s.strip
          raise Error, "sidecar needs a command, got #{entry[:command].inspect}" if command.empty?

          { name: (entry[:name] || File.basename(command.split.first)).to_s, command: command }
        end
      end

      def positive_integer(raw, what)
        n = Integer(raw, exception: false)
        raise Error, "#{what} must be a positive integer, got #{raw.inspect}" unless n&.positive?

        n
      end

      def non_negative_integer(raw, what)
        n = Integer(raw, exception: false)
        raise Error, "#{what} must be a non-negative integer, got #{raw.inspect}" unless n && n >= 0

        n
      end

      # A TCP port: the kernel takes 16 bits, so 70000 would become 4464 unless
      # refused here. 0 asks the kernel for a free one.
      def port(raw)
        n = Integer(raw.to_s, 10, exception: false) # decimal: "08080" is not octal
        raise Error, "port must be 1-65535 (or 0 for a free port), got #{raw.inspect}" unless n && (0..65_535).cover?(n)

        n
      end

      def seconds(raw, what)
        n = Float(raw, exception: false)
        raise Error, "#{what} must be a positive number of seconds, got #{raw.inspect}" unless n&.positive?

        n
      end

      # 0 allowed: "no delay" is a choice, not a mistake.
      def non_negative_seconds(raw, what)
        n = Float(raw, exception: false)
        return n if n && n >= 0 && n.finite?

        raise Error, "#{what} must be a number of seconds (0 or more), got #{raw.inspect}"
      end

      # An absolute path, compared with PATH_INFO as it is: no query, no
      # spaces or controls, which no request line could carry.
      def health_path(raw)
        path = raw.to_s
        return path if path.match?(%r{\A/[!-~]*\z}) && !path.include?("?") && !path.include?("#")

        raise Error, "health_path must be an absolute path like /healthz (no query), got #{raw.inspect}"
      end

      # An existing directory, as an absolute path (a relative one is taken
      # from the directory Spindle starts in).
      def directory(raw, what)
        path = File.expand_path(raw.to_s)
        return path if File.directory?(path)

        raise Error, "#{what} must be an existing directory, got #{raw.inspect}"
      end

      # "10.0.0.0/8,::1" or an Array of such: IPAddr networks.
      def networks(raw, what)
        list = raw.is_a?(Array) ? raw.map(&:to_s) : raw.to_s.split(",")
        raise Error, "#{what} needs at least one address or network" if list.empty?

        HTTP::Forwarded.parse_networks(list)
      rescue ArgumentError => e
        raise Error, "#{what}: #{e.message}"
      end

      def boolean(raw)
        [true, "true", "yes", "1", "on"].include?(raw)
      end

      # --cpu-affinity's modes. A bare flag (true) and the words #boolean
      # takes as on mean "process", what the flag meant before it took a mode.
      def cpu_affinity(raw)
        return "process" if boolean(raw) || raw.to_s == "process"
        return raw.to_s if %w[app auto].include?(raw.to_s)
        return false if [false, nil, "false", "no", "0", "off"].include?(raw)

        raise Error, "cpu_affinity must be auto, process, app or off, got #{raw.inspect}"
      end

      # "1000" or "1000,5000": request counts, one per generation.
      def count_list(raw, what)
        return nil if raw.nil?

        list = raw.is_a?(Array) ? raw : raw.to_s.split(",")
        raise Error, "#{what} needs at least one count" if list.empty?

        list.map { |n| positive_integer(n, what) }
      end

      ALLOCATORS = %w[auto glibc jemalloc].freeze

      def allocator(raw)
        name = raw.to_s
        return name if ALLOCATORS.include?(name)

        raise Error, "unknown allocator #{name.inspect} (choose from #{ALLOCATORS.join(', ')})"
      end

      # "auto" (or :auto, in a config file): Config::AutoSizing settles the
      # number at start, from the container; otherwise as check says.
      def or_auto(raw)
        return :auto if raw.to_s == "auto"

        yield raw
      end

      # "5" means 5:5; "0:16" means min 0, max 16.
      def thread_range(raw)
        min, max = raw.is_a?(Array) ? raw : raw.to_s.split(":", 2)
        max ||= min
        min = non_negative_integer(min, "threads minimum")
        max = positive_integer(max, "threads maximum")
        raise Error, "threads minimum #{min} is above maximum #{max}" if min > max

        [min, max]
      end
    end
  end
end
