# frozen_string_literal: true

require_relative "native"

module Spindle
  # Before bin/spindle loads the server: which gems to run with, and whether
  # anything may be installed or compiled first. Three ways in:
  #
  # - Under a bundle already (`bundle exec spindle`, or RUBYOPT=-rbundler/setup):
  #   the bundle is the app's, so it is used as it is and nothing is installed.
  #   It must include spindle-server (else one line says what to add). A path
  #   gem pointing at a clone is never compiled by Bundler, so a clone builds
  #   its extension into its own tmp/ext/; an installed gem never compiles (its
  #   extension was built by `gem install`).
  # - An installed gem, run without Bundler: RubyGems has activated the gem and
  #   its dependencies; nothing to do.
  # - A checkout: the Gemfile BUNDLE_GEMFILE names, else the app's own when
  #   the app has one (AppBundle), else this checkout's; its gems installed
  #   and the extension compiled on the first run (Bootstrap).
  module Launch
    module_function

    def prepare!(argv)
      if bundled?
        check_bundle!("or run #{File.join(Native::ROOT, 'bin', 'spindle')} without bundle exec")
        build_extension if Native.checkout?
      elsif Native.checkout?
        prepare_checkout(argv)
        require "bundler/setup"
        check_bundle!("or leave BUNDLE_GEMFILE unset to serve the app under its own Gemfile")
      end
    end

    def bundled?
      defined?(::Bundler) && !ENV["BUNDLE_GEMFILE"].to_s.empty?
    end

    # `bundle exec /clone/bin/spindle` in an app whose Gemfile lacks us failed
    # with `cannot load such file -- nio` (Spindle's own gems were missing).
    def check_bundle!(alternative)
      return if Gem.loaded_specs.key?("spindle-server")

      line = Native.checkout? ? %(gem "spindle-server", path: "#{Native::ROOT}") : 'gem "spindle-server"'
      give_up("#{ENV['BUNDLE_GEMFILE']} does not include Spindle: add `#{line}` to it and run bundle install " \
              "(#{alternative})")
    end

    # A Gemfile BUNDLE_GEMFILE names is used as it is, as Bundler would: the
    # user's choice, or ours when bench/run or a test names it (bench/apps/
    # sits below bench/Gemfile, the peers' Gemfile, which is no app's).
    def prepare_checkout(argv)
      require_relative "bootstrap"
      require_relative "app_bundle"
      app_gemfile = AppBundle.find(argv) if ENV["BUNDLE_GEMFILE"].to_s.empty?
      return Bootstrap.run! unless app_gemfile

      bundle = AppBundle.new(app_gemfile)
      write_app_bundle(bundle)
      ENV["BUNDLE_APP_CONFIG"] ||= bundle.app_config if bundle.app_config
      Bootstrap.run!(gemfile: bundle.gemfile, watched: bundle.watched, stamp: bundle.stamp)
    end

    def write_app_bundle(bundle)
      bundle.write
    rescue SystemCallError => e
      give_up("cannot write #{bundle.dir} to serve the app of #{bundle.app_gemfile} under its own gems " \
              "(#{e.message}): add `gem \"spindle-server\", path: \"#{Native::ROOT}\"` to that Gemfile " \
              "and run bundle exec spindle there")
    end

    def build_extension
      require_relative "bootstrap"
      Bootstrap.build_extension
    end

    def give_up(message)
      warn "spindle: #{message}"
      exit 2
    end
  end
end
