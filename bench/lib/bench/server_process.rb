# frozen_string_literal: true

require "shellwords"
require_relative "paths"
require_relative "http_probe"
require_relative "proc_stat"
require_relative "overrun"
require_relative "launch"
require_relative "free_port"
require_relative "child"
require_relative "setup"
require_relative "lane"
require_relative "baseline"
require_relative "yjit_check"

module Bench
  # Starts one server from its registry entry in its own process group, waits
  # until it answers the scenario's request (a deadline, never a bare sleep),
  # and stops the whole group: TERM, then KILL past the grace period.
  class ServerProcess
    class StartFailed < StandardError; end

    STOP_GRACE = 15 # seconds for TERM before KILL
    POLL = 0.05

    # Every server gets the same environment: production mode, and no Bundler
    # or RUBYOPT inherited from whoever ran bench/run. YJIT is on for every
    # Ruby server or for none (Bench::Lane).
    BASE_ENV = {
      "RACK_ENV" => "production", "APP_ENV" => "production",
      "RUBYOPT" => nil, "RUBYLIB" => nil, "BUNDLE_BIN_PATH" => nil, "BUNDLER_SETUP" => nil,
      "BUNDLER_VERSION" => nil, "BUNDLE_GEMFILE" => nil
    }.freeze

    attr_reader :launch, :pid, :pgid, :argv, :env, :chdir

    # Every start, of a registry server or one a scenario builds itself: a
    # fresh free port, this server, this scenario's app and request.
    def self.for(spec:, scenario:, threads:, processes:)
      new(Launch.new(spec: spec, scenario: scenario, port: FreePort.pick, threads: threads, processes: processes))
    end

    def initialize(launch)
      @launch = launch
      @env, @argv, @chdir = runtime(launch.spec, launch.spec.command.call(launch), launch.scenario.gemfile)
      @env = @env.merge(launch.scenario.env.call) if launch.scenario.env # the scenario's own (DATABASE_URL, ...)
    end

    # The command as one shell line for the report, paths relative to the
    # repository root (peers run from bench/, Spindle from the root).
    def command_line
      here = ->(v) { Shellwords.escape(v.to_s.sub(%r{\A#{Regexp.escape(chdir)}/}, "")) }
      set = env.compact.map { |k, v| "#{k}=#{here.call(v)}" }
      line = [*set, *argv.map(&here)].join(" ")
      chdir == Paths::ROOT ? line : "(cd #{Paths.relative(chdir)} && #{line})"
    end

    def log_path = File.join(launch.dir, "server.log")

    def start
      Setup.bundle!(launch.scenario.bundle) if launch.spec.runtime == :peers
      log = File.open(log_path, "a")
      @log_from = log.size # this start's lines only, for error messages
      log.puts("== #{Time.now} #{command_line}")
      log.flush
      begin
        @pid = Process.spawn(env, *argv, chdir: chdir, pgroup: true, in: File::NULL, out: log, err: log)
      rescue SystemCallError => e
        raise StartFailed, "cannot start #{argv.first}: #{e.message}"
      ensure
        log.close
      end
      @pgid = @pid # the group outlives its leader: kept to signal stragglers
      wait_until_ready
      YjitCheck.server(launch.spec.name, pid) unless launch.spec.runtime == :system # nginx is no Ruby
      self
    end

    # Bounded on its own (STOP_GRACE + 5 s), so a --quick overrun waits for
    # it rather than leave the server running (see Bench::Overrun).
    def stop
      Thread.handle_interrupt(Overrun => :never) do
        return unless @pid

        remember_tree # before TERM: a master may take its workers' group ids with it
        signal(:TERM)
        signal(:KILL) unless reap(STOP_GRACE)
        reap(5)
        kill_leftovers
        @pid = nil
      end
    end

    # False once the server's main process has exited (it is reaped here,
    # and why it exited is kept for the report).
    def alive?
      return false unless @pid

      remember_tree
      return true unless (exited = Process.wait2(@pid, Process::WNOHANG))

      @death = "#{describe(exited.last)}: #{log_tail}"
      @pid = nil
      kill_leftovers
      false
    end

    attr_reader :death

    private

    # gemfile: the scenario's own bundle, which every Ruby server then runs
    # under (the real-app scenarios: Rails and pg for Spindle and peers alike).
    def runtime(spec, command, gemfile)
      env = BASE_ENV.merge("RUBY_YJIT_ENABLE" => (Lane.yjit? ? "1" : nil))
      case spec.runtime
      when :spindle
        return [env.merge("BUNDLE_GEMFILE" => gemfile || Paths::SERVER_GEMFILE), command, Paths::ROOT] unless spec.root

        root = spec.root.call
        [env.merge("BUNDLE_GEMFILE" => gemfile || Baseline.gemfile(root)), command, root]
      when :peers then [env.merge("BUNDLE_GEMFILE" => gemfile || Paths::GEMFILE), ["bundle", "exec", *command], Paths::BENCH]
      when :system then [env, command, Paths::BENCH]
      else raise ArgumentError, "#{spec.name}: unknown runtime #{spec.runtime.inspect}"
      end
    end

    def wait_until_ready
      response = Child.wait_for(launch.spec.ready_timeout, every: POLL) do
        if (exited = Process.wait2(pid, Process::WNOHANG))
          signal(:KILL)
          raise StartFailed, "exited at start (#{describe(exited.last)}): #{log_tail}"
        end
        HttpProbe.get(launch.host, launch.port, launch.scenario.path, timeout: 1.0)
      end
      return check(response) if response

      stop
      raise StartFailed, "no HTTP answer within #{launch.spec.ready_timeout} s: #{log_tail}"
    end

    # A server that answers but wrongly is not measured: its figure would not
    # be comparable with the others' (nor one that sends 1xx first).
    def check(response)
      reason = HttpProbe.refusal(response, launch.scenario.expect_body) or return

      stop
      raise StartFailed, reason
    end

    def describe(status)
      status.signaled? ? "signal #{status.termsig}" : "exit #{status.exitstatus}"
    end

    def log_tail
      text = File.binread(log_path, nil, @log_from.to_i).force_encoding(Encoding::UTF_8).scrub
      lines = text.lines.reject { |l| l.start_with?("== ") }.last(3)
      lines.map(&:strip).reject(&:empty?).join(" | ")[0, 300]
    end

    def signal(name)
      Process.kill(name, -@pgid)
    rescue Errno::ESRCH, Errno::EPERM
      nil
    end

    def remember_tree
      @tree = ProcStat.tree_ticks(@pid).keys
    end

    # Workers that outlived their master: the group, and any process last
    # seen in the server's tree (Pitchfork's workers have groups of their own).
    def kill_leftovers
      signal(:KILL)
      ((@tree || []) - [@pgid]).each do |pid|
        Process.kill(:KILL, pid)
      rescue Errno::ESRCH, Errno::EPERM
        nil
      end
    end

    def reap(timeout)
      Child.wait_for(timeout, every: POLL) { Process.wait2(pid, Process::WNOHANG) } ? true : false
    rescue Errno::ECHILD
      true
    end
  end
end
