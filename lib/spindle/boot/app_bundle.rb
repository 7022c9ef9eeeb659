# frozen_string_literal: true

require "digest"
require "fileutils"
require_relative "native"

module Spindle
  # bin/spindle from a clone, serving an app that has its own Gemfile: the app
  # must run under its own gems (sinatra, rails, pg at the app's versions), as
  # it does under `puma`, and Spindle's gems must be there too. Neither the
  # app's Gemfile (no spindle-server in it) nor ours (no sinatra) will do, so
  # this writes a third one in the clone's tmp/: the app's Gemfile, evaluated
  # in place, plus this clone as a path gem unless the app already names
  # spindle-server. Its lock starts as a copy of the app's, so the app gets
  # the versions it has locked, and only Spindle's gems are added.
  #
  # Nothing is written into the app's directory.
  class AppBundle
    OWN_GEMFILE = File.join(Native::ROOT, "Gemfile")
    GEMFILE_NAMES = %w[Gemfile gems.rb].freeze
    DIR = File.join(Native::ROOT, "tmp", "app-bundles")

    # The app's Gemfile for this command line, or nil when the app has none
    # (or it is ours: examples/, the demo). The app is the rackup file named
    # (an argument ending in .ru), else ./config.ru; its Gemfile is the nearest
    # one in its directory or above. (A Gemfile BUNDLE_GEMFILE names is used
    # as it is, by Bootstrap, as Bundler would: Launch does not ask here then.)
    def self.find(argv, dir: Dir.pwd)
      rackup = argv.find { |arg| arg.end_with?(".ru") && !arg.start_with?("-") }
      rackup ||= "config.ru" if File.file?(File.join(dir, "config.ru"))
      return nil unless rackup

      gemfile = nearest_gemfile(File.dirname(File.expand_path(rackup, dir)))
      gemfile if gemfile && foreign?(gemfile)
    end

    # A Gemfile that is neither ours nor one of those written here.
    def self.foreign?(gemfile)
      File.file?(gemfile) && gemfile != OWN_GEMFILE && !gemfile.start_with?("#{DIR}/")
    end

    def self.nearest_gemfile(dir)
      loop do
        found = GEMFILE_NAMES.map { |name| File.join(dir, name) }.find { |path| File.file?(path) }
        return found if found

        parent = File.dirname(dir)
        return nil if parent == dir

        dir = parent
      end
    end

    attr_reader :app_gemfile, :dir

    def initialize(app_gemfile)
      @app_gemfile = File.expand_path(app_gemfile)
      @dir = File.join(DIR, Digest::SHA256.hexdigest(@app_gemfile)[0, 16])
    end

    def gemfile = File.join(@dir, "Gemfile")

    # Bundler's names: Gemfile.lock beside a Gemfile, gems.locked beside gems.rb.
    def app_lock
      @app_gemfile.end_with?("/gems.rb") ? @app_gemfile.sub(/gems\.rb\z/, "gems.locked") : "#{@app_gemfile}.lock"
    end

    # What the bundle check must be redone after: the app's Gemfile and lock,
    # and our gemspec (a new dependency of Spindle's).
    def watched = [@app_gemfile, app_lock, File.join(Native::ROOT, "spindle-server.gemspec")]

    def stamp = File.join(@dir, "bundle-ok-#{RUBY_VERSION}")

    # Writes the Gemfile (and seeds its lock); returns its path. Raises
    # SystemCallError when the clone's tmp/ cannot be written.
    def write
      FileUtils.mkdir_p(@dir)
      write_if_changed(gemfile, gemfile_text)
      seed_lock
      gemfile
    end

    # The app's settings (.bundle/config: path, without) still apply.
    def app_config
      config = File.join(File.dirname(@app_gemfile), ".bundle")
      config if File.directory?(config)
    end

    private

    def gemfile_text
      <<~RUBY
        # Written by #{File.join(Native::ROOT, 'bin', 'spindle')} to serve the app of
        # #{@app_gemfile} under its own gems. Safe to delete.
        eval_gemfile #{@app_gemfile.inspect}
        unless dependencies.any? { |dependency| dependency.name == "spindle-server" }
          gem "spindle-server", path: #{Native::ROOT.inspect}
        end
      RUBY
    end

    def write_if_changed(path, text)
      File.write(path, text) unless File.file?(path) && File.read(path) == text
    end

    # The app's lock, copied when ours is missing or older: the app's locked
    # versions are kept, and a `bundle update` in the app reaches us.
    def seed_lock
      lock = "#{gemfile}.lock"
      return unless File.file?(app_lock)
      return if File.file?(lock) && File.mtime(lock) >= File.mtime(app_lock)

      FileUtils.cp(app_lock, lock)
    end
  end
end
