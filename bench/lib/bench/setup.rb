# frozen_string_literal: true

require_relative "paths"
require_relative "log"

module Bench
  # First-use installs: the load generator and the nginx ceiling from Debian,
  # the peer servers from bench/Gemfile. Each step is skipped when already done,
  # so a second run starts measuring at once.
  module Setup
    module_function

    # Debian package => the executable it provides. nginx-light is enough (the
    # ceiling only returns a fixed body or a file); plain nginx is the fallback.
    PACKAGES = { "wrk" => "/usr/bin/wrk", "nginx-light" => "/usr/sbin/nginx" }.freeze
    FALLBACK = { "nginx-light" => "nginx" }.freeze

    def run!(install:)
      missing = PACKAGES.reject { |_, path| File.executable?(path) }.keys
      gems_ok = bundle_check
      return if missing.empty? && gems_ok
      abort "bench: missing #{missing.join(', ')}#{' and gems' unless gems_ok}; run without --no-install" unless install

      apt_install(missing) unless missing.empty?
      bundle_install unless gems_ok
    end

    def apt_install(packages)
      abort "bench: #{packages.join(', ')} missing and not root: apt-get install them" unless Process.uid.zero?
      Log.info("installing #{packages.join(' ')} (first run)")
      apt!("update", "-qq")
      packages.each do |name|
        next if apt("install", "-y", "-qq", name)

        fallback = FALLBACK[name]
        abort "bench: apt-get install #{name} failed" unless fallback && apt("install", "-y", "-qq", fallback)
      end
    end

    def bundle_check
      system(bundle_env, "bundle", "check", out: File::NULL, err: File::NULL)
    end

    def bundle_install
      Log.info("bundle install for bench/Gemfile (first run)")
      system(bundle_env, "bundle", "install", "--quiet") or abort "bench: bundle install failed"
    end

    def bundle_env
      { "BUNDLE_GEMFILE" => Paths::GEMFILE }
    end

    def apt(*args)
      system({ "DEBIAN_FRONTEND" => "noninteractive" }, "apt-get", *args, out: File::NULL)
    end

    def apt!(*args)
      apt(*args) or abort "bench: apt-get #{args.first} failed"
    end
  end
end
