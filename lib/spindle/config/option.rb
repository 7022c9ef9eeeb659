# frozen_string_literal: true

module Spindle
  class Config
    # One configuration option: its name, default, how to coerce and check a value,
    # and the sentence that documents it. The CLI, the config DSL and
    # docs/CONFIG.md are all generated from the list in options.rb, so they cannot
    # disagree.
    #
    # nil_means: the option also takes nil (the word "nil" on the command line, or
    # in a rackup -O option), and this says what nil does. The help and
    # CONFIG.md sentence is generated from it, so no option offers a nil that
    # the CLI refuses.
    Option = Struct.new(:name, :default, :doc, :cli, :arg, :coerce, :nil_means, keyword_init: true) do
      def value(raw)
        return nil if nil_means && (raw.nil? || raw == "nil")

        coerce ? coerce.call(raw) : raw
      end

      # The sentence the help and CONFIG.md print.
      def description
        nil_means ? "#{doc} nil: #{nil_means}." : doc
      end

      def default_value
        default.respond_to?(:call) ? default.call : default
      end

      def flag
        cli&.split(",")&.map(&:strip)
      end

      # name with the argument the option takes: "--workers N", or
      # "--[no-]cpu-affinity[=MODE]" for an optional one (written "[=MODE]",
      # which only ever takes its value after an "=", so a bare flag never
      # swallows the config.ru after it). sep goes between a name and a
      # required argument: " " on the command line, "=" in a rackup -O.
      def spelled(name, sep = " ")
        return name unless arg

        arg.start_with?("[") ? "#{name}#{arg}" : "#{name}#{sep}#{arg}"
      end
    end
  end
end
