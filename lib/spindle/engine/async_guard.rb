# frozen_string_literal: true

require_relative "../engine"
require_relative "../boot/ruby_version"

module Spindle
  module Engine
    # A start-up error like an unknown engine (one line, exit status 2): the
    # engine exists but cannot run with the gems this process has.
    class Unavailable < UnknownEngine; end

    # async 2.24.0 declares Ruby 3.1 support but calls IO#timeout, which only
    # Ruby 3.2 has: the fibers and hybrid engines crashed at their first wait
    # with a NoMethodError from inside async. The gemspec excludes 2.24.0
    # (every later async requires Ruby 3.2, so Bundler never picks one on 3.1);
    # this catches a bundle that pins it anyway, before the loop starts.
    module AsyncGuard
      BROKEN = Gem::Requirement.new(">= 2.24", "< 2.25")
      FIX = 'gem "async", "< 2.24"'

      module_function

      # Without Bundler (rackup from a plain gem install) nothing has picked an
      # async yet: take the newest that works here rather than the newest one.
      def activate!
        return if defined?(::Bundler) || Gem.loaded_specs.key?("async") || RubyVersion.at_least?("3.2")

        gem "async", "!= 2.24.0"
      rescue Gem::LoadError
        nil # require "async" then says which async is missing
      end

      # After require "async": Async::VERSION is right however async was found.
      def check!(ruby_version: RUBY_VERSION, async_version: ::Async::VERSION)
        message = problem(ruby_version, async_version)
        raise Unavailable, message if message
      end

      # The one line to print, or nil when this async works on this Ruby.
      def problem(ruby_version, async_version)
        return nil if async_version.nil? || RubyVersion.at_least?("3.2", ruby_version)
        return nil unless BROKEN.satisfied_by?(Gem::Version.new(async_version.to_s))

        "async #{async_version} needs Ruby 3.2 (it calls IO#timeout) and this is Ruby #{ruby_version}: " \
          "add #{FIX} to your Gemfile and run bundle update async"
      end
    end
  end
end
