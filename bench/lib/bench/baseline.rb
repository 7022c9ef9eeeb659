# frozen_string_literal: true

require_relative "command"
require_relative "paths"

module Bench
  # SPINDLE_BASELINE=REV: Spindle as committed at REV, run beside the current
  # code in the same run (entries "spindle-ENGINE@REV"), so that a change's
  # effect on the ratios to the peers is read from one run instead of from two
  # runs hours apart on a machine whose speed drifts. The checkout is a git
  # worktree under bench/tmp/baseline/, kept between runs; its first
  # `bin/spindle --version` installs its gems and compiles its extension,
  # outside any measurement. This machine's Ruby only.
  module Baseline
    DIR = File.join(Paths::ROOT, "bench", "tmp", "baseline")

    def self.rev = ENV["SPINDLE_BASELINE"]&.then { |r| r.empty? ? nil : r }

    # The worktree's path, made on first use.
    def self.checkout(rev)
      sha = git("rev-parse", "--short", "#{rev}^{commit}").strip
      root = File.join(DIR, sha)
      git("worktree", "add", "--detach", root, sha) unless File.exist?(File.join(root, "bin", "spindle"))
      result = Command.capture({ "BUNDLE_GEMFILE" => File.join(root, "Gemfile") },
                               [RbConfig.ruby, "bin/spindle", "--version"], timeout: 600, chdir: root)
      raise "baseline #{rev}: bin/spindle --version failed: #{result.output.lines.last}" unless result.ok

      root
    end

    def self.git(*args)
      result = Command.capture({}, ["git", *args], timeout: 120, chdir: Paths::ROOT)
      raise "git #{args.join(' ')}: #{result.output}" unless result.ok

      result.output
    end
  end
end
