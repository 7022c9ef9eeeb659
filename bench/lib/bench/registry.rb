# frozen_string_literal: true

require_relative "server_spec"

module Bench
  # The servers the harness knows, in report order. bench/servers.rb fills it;
  # adding a server is one `add` there.
  class Registry
    include Enumerable

    class UnknownServer < StandardError; end

    def initialize
      @specs = {}
    end

    def add(name, **attributes)
      raise ArgumentError, "server #{name} registered twice" if @specs.key?(name)

      @specs[name] = ServerSpec.new(name: name, **attributes).freeze
    end

    def each(&block) = @specs.each_value(&block)
    def names = @specs.keys
    def fetch(name) = @specs.fetch(name) { raise UnknownServer, "unknown server #{name}" }

    # patterns: names or globs ("spindle-*"); nil means every server but the
    # explicit ones (ServerSpec#explicit).
    def select_names(patterns)
      return reject(&:explicit) if patterns.nil?

      picked = patterns.flat_map do |pattern|
        found = @specs.values.select { |s| s.picked_by?(pattern) }
        raise UnknownServer, "no server matches #{pattern} (known: #{names.join(', ')})" if found.empty?

        found
      end
      picked.uniq
    end
  end

  SERVERS = Registry.new
end
