# frozen_string_literal: true

module Spindle
  # Loads the Rack app from a rackup file: the one named, else ./config.ru, else
  # the bundled demo.
  module AppLoader
    class Error < StandardError; end

    DEMO = File.expand_path("../demo/config.ru", __dir__)

    module_function

    def resolve(path)
      return File.expand_path(path) if path
      return File.expand_path("config.ru") if File.file?("config.ru")

      DEMO
    end

    def load(path)
      raise Error, "rackup file not found: #{path}" unless File.file?(path)

      require "rack"
      require "rack/builder"
      app = Rack::Builder.parse_file(path)
      app = app.first if app.is_a?(Array) # Rack 2 returns [app, options]
      raise Error, "#{path} did not produce an app (no `run`?)" unless app.respond_to?(:call)

      app
    rescue Error
      raise
    rescue StandardError, ScriptError => e
      # One line: a SyntaxError's message carries the source excerpt after it.
      raise Error, "cannot load #{path}: #{e.class}: #{e.message.lines.first&.chomp}"
    end
  end
end
