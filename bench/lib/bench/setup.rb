# frozen_string_literal: true

require "fileutils"
require_relative "paths"
require_relative "log"
require File.join(Bench::Paths::ROOT, "tools", "system_packages")

module Bench
  # First-use installs: Debian packages through the repository's one
  # installer (Spindle::SystemPackages, which bin/test uses too), and the peer
  # servers from bench/Gemfile's :peers group, only for a run that starts a
  # peer (they take minutes to build). Each step is skipped when already
  # done; --no-install refuses instead of installing.
  module Setup
    # The load generator, the nginx ceiling, and jemalloc: Spindle runs on it
    # by default when it is installed, so every run has it.
    PACKAGES = { "/usr/bin/wrk" => "wrk", "/usr/sbin/nginx" => "nginx", "/usr/lib/*/libjemalloc.so.2" => "libjemalloc2" }.freeze

    module_function

    # bundles: the Gemfiles whose servers this run may start (bench/Gemfile's
    # peers, the real-app bundle).
    def run!(install:, bundles:)
      @install = install
      FileUtils.mkdir_p(Paths::TMP) # scratch for every scenario's files (configs, logs, outputs)
      packages!(PACKAGES)
      bundles.uniq.each { |gemfile| bundle!(gemfile) }
    end

    # needs: { "/path/or/glob" => "debian-package" }.
    def packages!(needs)
      missing = needs.reject { |path, _| Dir.glob(path).any? }.values
      return if missing.empty?
      abort "bench: missing #{missing.join(', ')}; run without --no-install" if @install == false

      Spindle::SystemPackages.ensure!(needs)
    end

    # Also asked by every peer start (ServerProcess), once per Gemfile and
    # run: a scenario may start a peer that bench/run did not foresee.
    def bundle!(gemfile)
      (@bundles ||= {})[gemfile] ||= bundle_check(gemfile) || install(gemfile)
    end

    def install(gemfile)
      name = Paths.relative(gemfile)
      abort "bench: #{name}'s gems are not installed; run without --no-install" if @install == false
      Log.info("bundle install for #{name} (first run: the peer servers)")
      system(bundle_env(gemfile), "bundle", "install", "--quiet") or abort "bench: bundle install failed for #{name}"
    end

    def bundle_check(gemfile) = system(bundle_env(gemfile), "bundle", "check", out: File::NULL, err: File::NULL)

    def bundle_env(gemfile) = { "BUNDLE_GEMFILE" => gemfile, "RUBYOPT" => nil }
  end
end
