# frozen_string_literal: true

require_relative "options"

module Spindle
  class Config
    # Renders docs/CONFIG.md from OPTIONS. test/unit/config_docs_test.rb fails
    # when the file and the code disagree; regenerate with bin/docs.
    module Docs
      module_function

      def markdown
        [header, table, dsl_example].join("\n")
      end

      def header
        <<~MD
          # Configuration

          <!-- Generated from lib/spindle/config/options.rb by bin/docs. Do not edit by hand. -->

          Every option can be set in a config file (`bin/spindle -C FILE`). Most can also
          be set by a command-line flag. The flags win over the file, and the file wins
          over the defaults. In the file, each option is a method named after it.
        MD
      end

      def table
        rows = OPTIONS.map do |o|
          flag = o.cli ? "`#{o.cli}#{o.arg ? " #{o.arg}" : ''}`" : "—"
          "| `#{o.name}` | #{flag} | #{default_text(o)} | #{o.doc} |"
        end
        ["| option | flag | default | what it does |", "|---|---|---|---|", *rows, ""].join("\n")
      end

      def default_text(option)
        value = option.default_value
        return "—" if value.nil? || value == []

        "`#{value.is_a?(Array) ? value.join(':') : value}`"
      end

      def dsl_example
        <<~MD
          ## Config file

          ```ruby
          # spindle.rb, used as: bin/spindle -C spindle.rb
          bind "tcp://0.0.0.0:8080"
          bind "unix:///run/app.sock"   # each bind adds a listener
          engine "threads"
          threads 2, 16                 # min, max
          keepalive_timeout 5
          max_body 10 * 1024 * 1024
          log_requests true
          ```

          `environment` sets RACK_ENV before the app loads; `rackup` names the app file
          when none is given on the command line.
        MD
      end
    end
  end
end
