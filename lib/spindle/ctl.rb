# frozen_string_literal: true

require "json"
require "optparse"
require "socket"
require "uri"

module Spindle
  # bin/spindlectl: sends one command to a cluster's control endpoint and prints
  # the answer, as JSON (--json) or, for stats, as a table.
  class Ctl
    COMMANDS = %w[stats phased-restart hot-restart refork stop drain gc add-worker remove-worker].freeze

    def run(argv)
      options = parse(argv)
      command = argv.shift
      return usage_error("name a command: #{COMMANDS.join(', ')}") unless COMMANDS.include?(command)

      reply = request(options, command)
      puts(options[:json] || command != "stats" || reply["error"] ? JSON.pretty_generate(reply) : table(reply))
      reply["error"] ? 1 : 0
    rescue SystemCallError, IOError => e
      warn "spindlectl: cannot reach #{options[:control]}: #{e.message}"
      1
    end

    private

    def parse(argv)
      options = { control: ENV["SPINDLE_CONTROL"], token: ENV["SPINDLE_CONTROL_TOKEN"], json: false }
      OptionParser.new do |opts|
        opts.banner = "Usage: spindlectl [--control URI] [--token T] [--json] #{COMMANDS.join('|')}"
        opts.on("-c", "--control URI", "unix://PATH or tcp://HOST:PORT (or $SPINDLE_CONTROL)") { |v| options[:control] = v }
        opts.on("-t", "--token TOKEN", "for a TCP endpoint (or $SPINDLE_CONTROL_TOKEN)") { |v| options[:token] = v }
        opts.on("--json", "print JSON") { options[:json] = true }
      end.parse!(argv)
      options
    end

    def usage_error(message)
      warn "spindlectl: #{message}"
      2
    end

    def request(options, command)
      uri = URI.parse(options[:control].to_s)
      socket = uri.scheme == "tcp" ? TCPSocket.new(uri.hostname, uri.port) : UNIXSocket.new("#{uri.host}#{uri.path}")
      socket.puts(JSON.generate("command" => command, "token" => options[:token]))
      JSON.parse(socket.gets || "{}")
    ensure
      socket&.close
    end

    COLUMNS = %w[index pid state generation requests in_flight backlog checkin rss pss uss gc].freeze

    def table(stats)
      master = stats["master"]
      lines = ["master pid #{master['pid']}  generation #{master['generation']}  " \
               "workers #{stats['totals']['workers']}/#{master['workers_desired']}  engine #{master['engine']}  " \
               "allocator #{master['allocator']} (MALLOC_ARENA_MAX=#{master['malloc_arena_max'] || 'unset'})"]
      rows = [*stats["workers"], stats["mold"]].compact.map { |c| row(c) }
      rows << total_row(stats["totals"])
      lines.concat(align([COLUMNS, *rows]))
      lines.join("\n")
    end

    def row(child)
      memory = child["memory"] || {}
      [child["index"], child["pid"], child["state"], child["generation"], child["requests"], child["in_flight"],
       child["backlog"], "#{child['last_checkin_age']}s", mib(memory["rss"]), mib(memory["pss"]),
       mib(memory["uss"]), child.dig("gc", "count")].map(&:to_s)
    end

    def total_row(totals)
      ["total", "", "", "", totals["requests"], totals["in_flight"], "", "", mib(totals["rss"]),
       mib(totals["pss"]), mib(totals["uss"]), ""].map(&:to_s)
    end

    def mib(bytes) = bytes ? format("%.1fM", bytes / 1_048_576.0) : "-"

    def align(rows)
      widths = rows.transpose.map { |column| column.map(&:length).max }
      rows.map { |r| r.each_with_index.map { |cell, i| cell.ljust(widths[i]) }.join("  ").rstrip }
    end
  end
end
