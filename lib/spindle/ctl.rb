# frozen_string_literal: true

require "io/wait"
require "json"
require "optparse"
require "socket"
require "uri"

module Spindle
  # bin/spindlectl: sends one command to the control endpoint of a cluster, or
  # of a process serving alone, and prints the answer, as JSON (--json) or,
  # for stats, as a table.
  class Ctl
    COMMANDS = %w[stats phased-restart hot-restart refork stop drain gc reopen add-worker remove-worker].freeze

    # Long enough for the endpoint's own deadlines (the master answers stats
    # within 10 s or says it did not), short enough that a stopped master
    # does not hang a script.
    DEFAULT_TIMEOUT = 15

    # The endpoint did not answer within --timeout.
    class Timeout < StandardError; end

    def run(argv)
      options = parse(argv)
      command = argv.shift
      return usage_error("name a command: #{COMMANDS.join(', ')}") unless COMMANDS.include?(command)
      return usage_error("name the endpoint: --control URI or $SPINDLE_CONTROL") if options[:control].to_s.empty?

      reply = request(options, command)
      puts(options[:json] || command != "stats" || reply["error"] ? JSON.pretty_generate(reply) : table(reply))
      reply["error"] ? 1 : 0
    rescue OptionParser::ParseError => e
      usage_error(e.message)
    rescue Timeout
      warn "spindlectl: no answer from #{options[:control]} within #{format("%g", options[:timeout])}s " \
           "(is the master stopped or overloaded?)"
      1
    rescue SystemCallError, IOError, SocketError, URI::InvalidURIError, JSON::ParserError => e
      warn "spindlectl: cannot reach #{options[:control]}: #{e.message}"
      1
    end

    private

    def parse(argv)
      options = { control: ENV["SPINDLE_CONTROL"], token: ENV["SPINDLE_CONTROL_TOKEN"], json: false,
                  timeout: DEFAULT_TIMEOUT }
      OptionParser.new do |opts|
        opts.banner = "Usage: spindlectl [--control URI] [--token T] [--timeout S] [--json] #{COMMANDS.join('|')}"
        opts.on("-c", "--control URI", "unix://PATH or tcp://HOST:PORT (or $SPINDLE_CONTROL)") { |v| options[:control] = v }
        opts.on("-t", "--token TOKEN", "for a TCP endpoint (or $SPINDLE_CONTROL_TOKEN)") { |v| options[:token] = v }
        opts.on("--timeout SECONDS", Float, "give up after this long (default #{DEFAULT_TIMEOUT})") do |v|
          raise OptionParser::InvalidArgument, "#{v}: must be above 0" unless v.positive?

          options[:timeout] = v
        end
        opts.on("--json", "print JSON") { options[:json] = true }
      end.parse!(argv)
      options
    end

    def usage_error(message)
      warn "spindlectl: #{message}"
      2
    end

    # One deadline covers connecting, sending and reading the answer.
    def request(options, command)
      limit = now + options[:timeout]
      socket = connect(URI.parse(options[:control]), options[:timeout])
      socket.write("#{JSON.generate('command' => command, 'token' => options[:token])}\n") # fits the socket buffer
      line = read_line(socket, limit)
      raise IOError, "the endpoint closed the connection without an answer" if line.empty?

      JSON.parse(line)
    ensure
      socket&.close
    end

    def connect(uri, seconds)
      case uri.scheme
      when "tcp" then Socket.tcp(uri.hostname, uri.port, connect_timeout: seconds)
      when "unix" then Addrinfo.unix("#{uri.host}#{uri.path}").connect(timeout: seconds)
      else raise IOError, "the endpoint must be unix://PATH or tcp://HOST:PORT"
      end
    rescue Errno::ETIMEDOUT
      raise Timeout
    end

    def read_line(socket, limit)
      line = String.new(encoding: Encoding::BINARY)
      until line.end_with?("\n")
        chunk = socket.read_nonblock(65_536, exception: false)
        break if chunk.nil?

        if chunk == :wait_readable
          remaining = limit - now
          raise Timeout if remaining <= 0 || !socket.wait_readable(remaining)
        else
          line << chunk
        end
      end
      line.force_encoding(Encoding::UTF_8)
    end

    def now = Process.clock_gettime(Process::CLOCK_MONOTONIC)

    COLUMNS = %w[index pid state generation requests in_flight backlog checkin rss pss uss gc].freeze

    def table(stats)
      lines = [heading(stats), *refork_lines(stats["master"]["refork"])]
      rows = [*stats["workers"], stats["mold"]].compact.map { |c| row(c) }
      rows << total_row(stats["totals"])
      lines.concat(align([COLUMNS, *rows]))
      lines.concat(sidecar_lines(stats["sidecars"]))
      lines.join("\n")
    end

    # Under the table, one line per sidecar (--sidecar): name, pid (or that
    # it waits to be started again), restarts, since when.
    def sidecar_lines(sidecars)
      Array(sidecars).map do |s|
        "sidecar #{s['name']}  pid #{s['pid'] || '- (starting again)'}  restarts #{s['restarts']}  " \
          "started_at #{s['started_at'] || '-'}  #{s['command']}"
      end
    end

    # A process alone (no -w) reports itself as the master and as worker 0.
    def heading(stats)
      master = stats["master"]
      allocator = "allocator #{master['allocator']} (#{allocator_settings(master)})"
      return "single process pid #{master['pid']}  engine #{master['engine']}  #{allocator}" if stats["mode"] == "single"

      "master pid #{master['pid']}  generation #{master['generation']}  " \
        "workers #{stats['totals']['workers']}/#{master['workers_desired']}  engine #{master['engine']}  #{allocator}"
    end

    # A refork under way, and why the last one failed (nothing when neither).
    def refork_lines(refork)
      return [] unless refork

      lines = []
      lines << "refork to generation #{refork['generation']}: #{refork['state']}" unless refork["state"] == "idle"
      failure = refork["last_failure"]
      lines << "last refork failure (generation #{failure['generation']}, #{failure['at']}): #{failure['reason']}" if failure
      lines
    end

    # "MALLOC_CONF=narenas:2" under jemalloc, "MALLOC_ARENA_MAX=2" under glibc.
    def allocator_settings(master)
      return "MALLOC_CONF=#{master['malloc_conf'] || 'unset'}" if master["allocator"] == "jemalloc"

      "MALLOC_ARENA_MAX=#{master['malloc_arena_max'] || 'unset'}"
    end

    # The mold's row says so in the index column: the slot it served in as a
    # worker is no slot of the cluster now. It does not check in ("-").
    def row(child)
      memory = child["memory"] || {}
      mold = child["state"].start_with?("mold") && child["state"] != "mold_pending"
      age = child["last_checkin_age"]
      [mold ? "mold" : child["index"], child["pid"], child["state"], child["generation"], child["requests"],
       child["in_flight"], child["backlog"], age ? "#{age}s" : "-", mib(memory["rss"]), mib(memory["pss"]),
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
