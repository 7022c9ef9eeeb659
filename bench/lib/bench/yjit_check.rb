# frozen_string_literal: true

require_relative "command"

module Bench
  # Whether YJIT was really on in the servers. RUBY_YJIT_ENABLE=1 only asks
  # for it: a Ruby built without YJIT (Debian's ruby3.3) ignores it silently.
  # So every Ruby server, once it answers, is looked at where it runs: the
  # binary it runs (/proc/PID/exe: whatever `bundle exec` or a shebang
  # resolved to) and the variable in its own environment (/proc/PID/environ).
  # That binary is then asked, under the same variable, what
  # RubyVM::YJIT.enabled? says (once per binary). A run's record says YJIT on
  # only when that was true for every Ruby server it started (Machine.yjit).
  module YjitCheck
    ASK = "print RubyVM::YJIT.enabled?"

    module_function

    # At the start of each scenario's record (RunRecord).
    def reset
      @servers = {}
    end

    # name => { ruby: its binary, enabled: true or false }, over every start
    # of that server since reset: on only if on in all of them.
    def servers = @servers || {}

    def server(name, pid)
      ruby = File.readlink("/proc/#{pid}/exe")
      asked = File.binread("/proc/#{pid}/environ").split("\0").include?("RUBY_YJIT_ENABLE=1")
      record(name, ruby, asked && enabled?(ruby))
    rescue SystemCallError => e # it exited meanwhile: not on, as far as anyone can tell
      record(name, "unknown (#{e.message})", false)
    end

    # What ruby says with RUBY_YJIT_ENABLE=1 and nothing in RUBYOPT, as every
    # server gets them (ServerProcess::BASE_ENV).
    def enabled?(ruby)
      (@answers ||= {}).fetch(ruby) do
        result = Command.capture({ "RUBYOPT" => nil, "RUBY_YJIT_ENABLE" => "1" }, [ruby, "-e", ASK], timeout: 20)
        @answers[ruby] = result.ok && result.output.strip == "true"
      end
    end

    def record(name, ruby, enabled)
      before = servers[name]
      (@servers ||= {})[name] = { ruby: ruby, enabled: enabled && (before.nil? || before[:enabled]) }
    end
  end
end
