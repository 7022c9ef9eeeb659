# frozen_string_literal: true

require "fileutils"
require_relative "command"
require_relative "paths"

module Bench
  # SPINDLE_BASELINE=REV: Spindle as committed at REV, run beside the current
  # code in the same run (entries "spindle-ENGINE@REV"), so that a change's
  # effect on the ratios to the peers is read from one run instead of from two
  # runs hours apart on a machine whose speed drifts. The checkout is a git
  # worktree under bench/tmp/baseline/, kept between runs; its first
  # `bin/spindle --version` installs its gems and compiles its extension,
  # outside any measurement.
  #
  # With --ruby 3.3, bench/run makes the worktree on this machine (the chroot
  # has no git) and hands the chroot its commit (Lane); there the baseline
  # runs under a Gemfile of its own for 3.3, as the current code does, with
  # the current code's 3.3 lockfile as its start.
  module Baseline
    DIR = File.join(Paths::ROOT, "bench", "tmp", "baseline")

    def self.rev = ENV["SPINDLE_BASELINE"]&.then { |r| r.empty? ? nil : r }

    # The worktree's path, made on first use, with its gems and extension.
    def self.checkout(rev)
      root = File.join(DIR, worktree(rev))
      result = Command.capture({ "BUNDLE_GEMFILE" => gemfile(root) },
                               [RbConfig.ruby, "bin/spindle", "--version"], timeout: 600, chdir: root)
      raise "baseline #{rev}: bin/spindle --version failed: #{result.output.lines.last}" unless result.ok

      root
    end

    # The short commit of rev, its worktree made under DIR. A worktree of
    # that name already there is taken as it is, without git.
    def self.worktree(rev)
      return rev if File.exist?(File.join(DIR, rev, "bin", "spindle"))

      sha = git("rev-parse", "--short", "#{rev}^{commit}").strip
      root = File.join(DIR, sha)
      git("worktree", "add", "--detach", root, sha) unless File.exist?(File.join(root, "bin", "spindle"))
      sha
    end

    # The Gemfile the baseline at root runs under: its own, or on a chroot
    # lane's Ruby one in its tmp/ruby<version>/ that evaluates it (Paths::SERVER_GEMFILE's
    # counterpart), its lockfile seeded from the current code's.
    def self.gemfile(root)
      return File.join(root, "Gemfile") unless Paths::SERVER_LANE

      dir = File.join(root, "tmp", Paths::SERVER_LANE)
      FileUtils.mkdir_p(dir)
      %w[Gemfile Gemfile.lock].each do |name|
        target = File.join(dir, name)
        FileUtils.cp(File.join(File.dirname(Paths::SERVER_GEMFILE), name), target) unless File.exist?(target)
      end
      File.join(dir, "Gemfile")
    end

    def self.git(*args)
      result = Command.capture({}, ["git", *args], timeout: 120, chdir: Paths::ROOT)
      raise "git #{args.join(' ')}: #{result.output}" unless result.ok

      result.output
    end
  end
end
