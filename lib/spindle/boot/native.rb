# frozen_string_literal: true

require "rbconfig"

module Spindle
  # Finds the compiled extension: built by bin/spindle or bin/test into
  # tmp/ext/<ruby ABI>/ in a checkout, or by RubyGems when installed as a gem.
  module Native
    ROOT = File.expand_path("../../..", __dir__)

    # Not a LoadError on purpose: rackup treats a LoadError from its handler
    # file as "no such handler" and goes on to try rack/handler/spindle, whose
    # own failure (`cannot load such file -- rack/handler` on Rack 3) is what
    # the user then saw instead of this.
    class MissingExtension < StandardError; end

    def self.build_dir
      File.join(ROOT, "tmp", "ext", "#{RUBY_ENGINE}-#{RbConfig::CONFIG['ruby_version']}-#{RUBY_PLATFORM}")
    end

    # A checkout: the sources with their Gemfile and gemspec (an installed gem
    # ships neither), which bin/spindle may install gems and compile for.
    def self.checkout?
      File.file?(File.join(ROOT, "Gemfile")) && File.file?(File.join(ROOT, "spindle-server.gemspec"))
    end

    def self.require_extension(name)
      local = File.join(build_dir, "#{name}.#{RbConfig::CONFIG['DLEXT']}")
      File.exist?(local) ? require(local) : require(name)
    rescue LoadError => e
      raise unless e.path.nil? || e.path == name

      raise MissingExtension, missing_message(name)
    end

    # For code with a fallback in Ruby (FileBody's copy, a master that is no
    # subreaper): whether the extension is loaded, loading it if not, through
    # http/parser.rb, which defines what its Init looks up. false where it was
    # never built; asked once, so a missing one is not tried (and the parser
    # file loaded) again.
    def self.extension_loaded?
      return @extension_loaded if defined?(@extension_loaded)

      @extension_loaded = begin
        require_relative "../http/parser"
        true
      rescue MissingExtension
        false
      end
    end

    # A path gem (`gem "spindle-server", path: CLONE`) is never compiled by
    # Bundler, and rackup or rails server do not run bin/spindle's build.
    def self.missing_message(name)
      if checkout?
        "spindle: the C extension #{name} is not built in #{ROOT}: run #{File.join(ROOT, 'bin', 'build-ext')} once " \
          "(bin/spindle does it by itself)"
      else
        "spindle: the C extension #{name} is missing from #{ROOT}: reinstall the gem (gem pristine spindle-server)"
      end
    end
  end
end
