# frozen_string_literal: true

require "digest"
require_relative "paths"
require_relative "command"
require_relative "log"

module Bench
  # Version strings for the report: peers from bench/Gemfile.lock (what Bundler
  # actually loads), Debian tools from their own --version output.
  module Versions
    module_function

    def gem(name)
      lock = "#{@gemfile || Paths::GEMFILE}.lock"
      return "unknown (no Gemfile.lock)" unless File.exist?(lock)

      File.read(lock)[/^    #{Regexp.escape(name)} \(([^)]+)\)$/, 1] || "not in Gemfile.lock"
    end

    # Gem versions read from another Gemfile's lock meanwhile: the bundle a
    # scenario's servers run under (Scenario#bundle).
    def using(gemfile)
      @gemfile, before = gemfile, @gemfile
      yield
    ensure
      @gemfile = before
    end

    # The first match of pattern in what argv prints (nginx and wrk print
    # their version on stderr and may exit non-zero).
    def command(argv, pattern)
      result = Command.capture({}, argv, timeout: 10)
      result.output[pattern, 1] || "unknown"
    end

    # Asked once per run however many Spindle entries there are.
    def spindle
      @spindle ||= spindle_probe
    end

    # A digest of Spindle's source (lib/, ext/, bin/). Taken at the start and
    # the end of a run: if they differ, the server changed under the run and
    # its figures mix versions.
    def spindle_source
      files = Dir[File.join(Paths::ROOT, "{lib,ext,bin}", "**", "*")].select { |f| File.file?(f) }.sort
      digest = Digest::SHA256.new
      files.each { |f| digest << f << File.binread(f) }
      digest.hexdigest[0, 12]
    end

    # Spindle's source digest now against the one taken at the start.
    def source_record(before)
      after = spindle_source
      Log.warn("Spindle's source changed during the run: its figures mix versions") if after != before
      { at_start: before, at_end: after, changed: after != before }
    end

    def load_generator(threads)
      { tool: "wrk #{command(%w[wrk -v], /wrk (\S+)/)}", threads: threads, shares_cores: true }
    end

    # A server's version for the report; a probe that fails says why.
    def safely(version)
      version.call
    rescue StandardError => e
      "unknown (#{e.message})"
    end

    def spindle_probe
      env = { "BUNDLE_GEMFILE" => Paths::SERVER_GEMFILE }
      # bin/spindle installs its gems and compiles its extension on first use;
      # asking its version here does that before any timed start.
      result = Command.capture(env, [RbConfig.ruby, "bin/spindle", "--version"], timeout: 600, chdir: Paths::ROOT)
      version = result.output[/spindle (\S+)/, 1]
      return "unavailable: #{result.output.lines.last&.strip}" unless result.ok && version

      commit = Command.capture({}, %w[git rev-parse --short HEAD], timeout: 10, chdir: Paths::ROOT)
      # The Ruby 3.3 chroot has no git (and sees no worktree's .git): the
      # source digest in the Run table still names the code.
      commit.ok ? "#{version} (#{commit.output.strip})" : "#{version} (commit unknown here: no git repository or no git)"
    end
  end
end
