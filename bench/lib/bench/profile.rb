# frozen_string_literal: true

require "json"
require "tmpdir"
require "fileutils"
require_relative "paths"
require_relative "wrk_trial"
require_relative "proc_stat"
require_relative "child"
require_relative "log"
require_relative "profile_split"

module Bench
  # Where the time goes (bench/run rails --profile): each server process
  # loads profile_hook.rb (RUBYOPT), idle until asked. After each measured
  # wrk run, a second wrk run of the same length is profiled (StackProf, CPU
  # mode, in every process of the server); its samples are split into server
  # and app code (Bench::ProfileSplit) and kept beside the measurement as
  # `profile`. The measured figure never comes from a profiled run.
  module Profile
    HOOK = File.join(__dir__, "profile_hook.rb")
    START_WAIT = 5 # seconds for every process to start sampling
    RESULT_WAIT = 20 # seconds for every process to write its split

    class << self
      attr_writer :armed

      def armed? = @armed == true

      # For a scenario's env: the hook and its directory (one per start).
      def env
        return {} unless armed?

        FileUtils.mkdir_p(Paths::TMP)
        { "RUBYOPT" => "-r#{HOOK}", "BENCH_PROFILE_DIR" => Dir.mktmpdir("profile-", Paths::TMP) }
      end

      # The splits of every process, summed: { samples:, server:, app:, gc:,
      # other:, top_server:, processes: }.
      def sum(splits)
        total = %i[samples server app gc other].to_h { |k| [k, splits.sum { |s| s[k].to_i }] }
        top = Hash.new(0)
        splits.each { |s| s[:top_server].to_a.each { |name, n| top[name] += n } }
        total.merge(top_server: top.sort_by { |name, n| [-n, name.to_s] }.first(ProfileSplit::TOP), processes: splits.size)
      end
    end

    # The rails scenarios' trial: WrkTrial, plus a profiled window when armed.
    class Trial < WrkTrial
      def measure(connections)
        record = super
        return record unless Profile.armed?

        split = profile(connections)
        Log.info(format("profile   %-28s c=%-4d %6d samples  server code %5.1f %%  app code %5.1f %%  GC %5.1f %%  other %5.1f %%",
                        @server.launch.spec.name, connections, split[:samples],
                        *%i[server app gc other].map { |k| 100.0 * split[k] / [split[:samples], 1].max }))
        record.merge(profile: split)
      end

      private

      def profile(connections)
        dir = @server.env.fetch("BENCH_PROFILE_DIR")
        FileUtils.touch(File.join(dir, "go"))
        pids = ProcStat.tree_ticks(@server.pgid).keys
        Child.wait_for(START_WAIT, every: 0.05) { (pids - started(dir)).empty? } or
          Log.warn("profile: not every process started sampling (#{started(dir).size} of #{pids.size})")
        wrk(connections, @settings.duration).run
        FileUtils.touch(File.join(dir, "stop"))
        collect(dir, started(dir))
      end

      def started(dir) = Dir[File.join(dir, "*.started")].map { |f| Integer(File.basename(f, ".started")) }

      def collect(dir, pids)
        results = ->(pid) { File.join(dir, "#{pid}.json") }
        Child.wait_for(RESULT_WAIT, every: 0.05) { pids.all? { |pid| File.exist?(results.call(pid)) } }
        splits = pids.filter_map { |pid| JSON.parse(File.read(results.call(pid)), symbolize_names: true) if File.exist?(results.call(pid)) }
        FileUtils.rm_f([File.join(dir, "go"), File.join(dir, "stop")])
        FileUtils.rm_f(Dir[File.join(dir, "*.{started,json}")])
        Profile.sum(splits)
      end
    end
  end
end
