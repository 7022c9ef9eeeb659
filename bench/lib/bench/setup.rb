# frozen_string_literal: true

require "fileutils"
require_relative "paths"
require_relative "log"
require File.join(Bench::Paths::ROOT, "lib", "spindle", "system_packages")

module Bench
  # First-use installs: Debian packages through the repository's one
  # installer (Spindle::SystemPackages, which bin/test uses too), and the peer
  # servers from bench/Gemfile's :peers group, only for a run that starts a
  # peer (they take minutes to build). Each step is skipped when already
  # done; --no-install refuses instead of installing.
  module Setup
    # The load generator and the nginx ceiling.
    PACKAGES = { "/usr/bin/wrk" => "wrk", "/usr/sbin/nginx" => "nginx" }.freeze

    module_function

    def run!(install:, peers:)
      @install = install
      FileUtils.mkdir_p(Paths::TMP) # scratch for every scenario's files (configs, logs, outputs)
      packages!(PACKAGES)
      peers! if peers
    end

    # needs: { "/path/or/glob" => "debian-package" }.
    def packages!(needs)
      missing = needs.reject { |path, _| Dir.glob(path).any? }.values
      return if missing.empty?
      abort "bench: missing #{missing.join(', ')}; run without --no-install" if @install == false

      Spindle::SystemPackages.ensure!(needs)
    end

    # Also asked by every peer start (ServerProcess), once per run: a
    # scenario may start a peer that bench/run did not foresee.
    def peers!
      @peers ||= bundle_check || install_peers
    end

    def install_peers
      abort "bench: bench/Gemfile's peers are not installed; run without --no-install" if @install == false
      Log.info("bundle install for bench/Gemfile (first run: the peer servers)")
      system(bundle_env, "bundle", "install", "--quiet") or abort "bench: bundle install failed"
    end

    def bundle_check = system(bundle_env, "bundle", "check", out: File::NULL, err: File::NULL)

    def bundle_env = { "BUNDLE_GEMFILE" => Paths::GEMFILE }
  end
end
