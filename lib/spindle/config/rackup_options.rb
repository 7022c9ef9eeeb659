# frozen_string_literal: true

require_relative "options"

module Spindle
  class Config
    # The options `rackup -s spindle -O Name=VALUE` takes, derived from OPTIONS so
    # the handler offers whatever the CLI does. A name is the option's long flag
    # (or, for a file-only option, its name) in CamelCase, as rackup's own Host
    # and Port are: --workers is Workers, --max-body MaxBody, --[no-]preload
    # Preload, max_head MaxHead. Only CamelCase keys are read: rackup puts its
    # own settings (config, environment, quiet...) in the same hash in lower case.
    module RackupOptions
      # Options rackup itself provides, with where: offering them twice would
      # leave two answers to one question.
      LEFT_TO_RACKUP = {
        port: "rackup's -p (Port)",
        environment: "rackup's -E, which sets RACK_ENV before the app loads",
        rackup: "rackup's config.ru argument",
        # rackup always passes AccessLog (WEBrick's setting, an Array): read
        # as ours, it named no file and stopped the server at boot.
        access_log: "set in a config file (`-O Config=FILE`): rackup's `AccessLog` is WEBrick's own setting, " \
                    "which rackup always passes",
      }.freeze

      module_function

      def name_of(option)
        long = option.flag&.find { |f| f.start_with?("--") }
        base = long ? long.delete_prefix("--").sub("[no-]", "") : option.name.to_s
        base.split(/[-_]/).map(&:capitalize).join
      end

      def offered
        OPTIONS.reject { |o| LEFT_TO_RACKUP.key?(o.name) }
      end

      # rackup prints these under "Server-specific options" in `rackup -s spindle -h`.
      def help
        offered.to_h do |option|
          [option.spelled(name_of(option), "="), option.description]
        end
      end

      # CamelCase keys rackup sets itself, and DoNotReverseLookup, which `rails
      # server` always passes (a WEBrick setting): refusing it stopped every
      # `rails server -u spindle` at boot.
      RACKUP_OWN = %i[Host Port AccessLog DoNotReverseLookup].freeze

      # Lower-case keys rackup and `rails server` set themselves that fold to
      # one of our names: rackup's config.ru (not our Config file), its -q
      # (Quiet), rails server's --early-hints (EarlyHints). They are theirs.
      THEIRS_IN_LOWER_CASE = %i[config quiet early_hints].freeze

      # The values the options rackup passed set (rackup gives strings, or true
      # for a bare -O Name). Bind may list several URIs, comma-separated. A
      # CamelCase name that is neither ours nor rackup's is a typo: refused, not
      # ignored.
      def values(options)
        check_names(options)
        offered.each_with_object({}) do |option, values|
          key = name_of(option).to_sym
          next unless options.key?(key)

          raw = options[key]
          values[option.name] = option.name == :binds ? raw.to_s.split(",") : option.value(raw)
        end
      end

      # One of our names in another spelling (-O engine=fibers, -O max_body)
      # is refused with the right one, not taken: rackup and rails server pass
      # their own settings in lower case in the same hash, some under names
      # that fold to ours (THEIRS_IN_LOWER_CASE), and rackup's users know
      # CamelCase from its Host and Port, as in Puma's -O Threads.
      def check_names(options)
        known = offered.map { |o| name_of(o).to_sym } + RACKUP_OWN
        refused = options.keys.filter_map { |key| refusal(key, known) }
        return if refused.empty?

        raise Error, "unknown option #{refused.join(', ')} (rackup -s spindle -h lists them)"
      end

      # "-O Name" for a name that is not ours, with ours when it only differs
      # in case, - or _; nil for ours, and for a lower-case name that is
      # rackup's or rails server's.
      def refusal(key, known)
        return nil if known.include?(key) || THEIRS_IN_LOWER_CASE.include?(key)

        right = known.find { |name| fold(name) == fold(key) }
        return "-O #{key} (did you mean -O #{right}? the names are CamelCase)" if right

        "-O #{key}" if key.match?(/\A[A-Z]/)
      end

      def fold(name) = name.to_s.delete("-_").downcase

      # Where rackup's -o and -p say to listen.
      def host_port_bind(options)
        host = options.fetch(:Host, "0.0.0.0").to_s
        host = "[#{host}]" if host.include?(":")
        "tcp://#{host}:#{Coerce.port(options.fetch(:Port, 9292))}"
      end
    end
  end
end
