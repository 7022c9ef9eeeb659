# frozen_string_literal: true

module Spindle
  class Config
    # One configuration option: its name, default, how to coerce and check a value,
    # and the sentence that documents it. The CLI, the config DSL and
    # docs/CONFIG.md are all generated from the list in options.rb, so they cannot
    # disagree.
    Option = Struct.new(:name, :default, :doc, :cli, :arg, :coerce, keyword_init: true) do
      def value(raw)
        coerce ? coerce.call(raw) : raw
      end

      def default_value
        default.respond_to?(:call) ? default.call : default
      end

      def flag
        cli&.split(",")&.map(&:strip)
      end
    end
  end
end
