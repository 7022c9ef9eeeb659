# frozen_string_literal: true

require "etc"
require "rbconfig"
require_relative "command"
require_relative "lane"
require_relative "yjit_check"

module Bench
  # The machine a run happened on, as BENCHMARKS.md asks every report to say.
  module Machine
    module_function

    def describe
      {
        nproc: Etc.nprocessors,
        memory_gib: memory_gib,
        cpu: File.foreach("/proc/cpuinfo").grep(/^model name/).first.to_s.split(":", 2).last.to_s.strip,
        kernel: "#{Etc.uname[:sysname]} #{Etc.uname[:release]}",
        os: os_name,
        ruby: RUBY_DESCRIPTION,
        yjit: yjit
      }
    end

    def memory_gib
      kib = File.foreach("/proc/meminfo").grep(/^MemTotal:/).first.to_s[/\d+/].to_i
      (kib / 1024.0 / 1024.0).round(1)
    end

    def os_name
      File.foreach("/etc/os-release").grep(/^PRETTY_NAME=/).first.to_s.split("=", 2).last.to_s.strip.delete('"')
    rescue Errno::ENOENT
      "unknown"
    end

    # Servers run with RUBYOPT cleared, and YJIT asked for in all
    # (RUBY_YJIT_ENABLE=1, --yjit; the default with --ruby 3.3) or in none.
    # On only if every Ruby server's own binary said so (YjitCheck: a Ruby
    # built without YJIT ignores the variable); whether this Ruby has it, and
    # what each server ran, are recorded too.
    def yjit
      servers = YjitCheck.servers
      { enabled_for_servers: Lane.yjit? && !servers.empty? && servers.values.all? { |s| s[:enabled] },
        asked: Lane.yjit?, available: YjitCheck.enabled?(RbConfig.ruby), servers: servers }
    end
  end
end
