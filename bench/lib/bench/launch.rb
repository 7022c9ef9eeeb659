# frozen_string_literal: true

require "fileutils"
require_relative "paths"

module Bench
  # What a registry entry's command is built from: one server, one port, one
  # thread and process count, one scenario. Config files a server needs
  # (nginx, unicorn) are written into this launch's own scratch directory.
  Launch = Struct.new(:spec, :scenario, :port, :threads, :processes, keyword_init: true) do
    def host = "127.0.0.1"
    def address = "#{host}:#{port}"
    def url(path = scenario.path) = "http://#{address}#{path}"
    def thread_range = "#{threads}:#{threads}"
    def rackup = scenario.rackup

    def dir
      @dir ||= File.join(Paths::TMP, "#{spec.name}-p#{processes}").tap { |d| FileUtils.mkdir_p(d) }
    end

    # Writes a config file for this launch and returns its path. What was
    # written is kept for the report: it is part of the exact command.
    def write(name, content)
      File.join(dir, name).tap do |path|
        File.write(path, content)
        written[Paths.relative(path)] = content
      end
    end

    def written = (@written ||= {})
  end
end
