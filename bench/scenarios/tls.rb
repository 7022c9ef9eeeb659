# frozen_string_literal: true

require "openssl"
require "rbconfig"
require "fileutils"
require_relative "../lib/bench/custom_scenario"
require_relative "../lib/bench/free_port"
require_relative "../lib/bench/child"

module Bench
  # Issue 14, TLS: Spindle's engines against Puma, both terminating TLS on
  # the hello app, one process each. Two figures per server, as ratios to
  # Puma in the same run:
  # - handshakes per second: a new connection (a full handshake, no session
  #   resumption) per request. wrk keeps connections open, so this is
  #   `openssl s_time -new -www /`: a C client that connects, shakes hands,
  #   sends GET / (HTTP/1.0) and reads until close, for a fixed time;
  #   CLIENTS of them run at once. Bounded by -time and a kill deadline.
  # - keep-alive requests per second over TLS: wrk on the https:// URL.
  # Each server also listens on plain TCP, which only the harness's
  # readiness probe uses.
  class TlsThroughput < CustomScenario
    SERVERS = {
      "spindle" => { engine: "threads", runtime: :spindle }, # the default engine
      "spindle-blocking" => { engine: "blocking", runtime: :spindle },
      "spindle-fibers" => { engine: "fibers", runtime: :spindle },
      "spindle-hybrid" => { engine: "hybrid", runtime: :spindle },
      "puma" => { runtime: :peers }
    }.freeze
    THREADS = 5
    CONNECTIONS = 16 # wrk's keep-alive connections
    CLIENTS = 4 # openssl s_time processes at once
    COLORS = { "spindle" => "#3182bd", "spindle-blocking" => "#6baed6", "spindle-fibers" => "#31a354",
               "spindle-hybrid" => "#74c476", "puma" => "#e6550d" }.freeze
    S_TIME = /(\d+) connections in [\d.]+ real seconds, (\d+) bytes read per connection/

    def initialize(scenario, settings)
      super
      @seconds = settings.quick ? 2 : [settings.duration, 10].max
      @rounds = settings.quick ? 1 : settings.rounds
      @names = picked(SERVERS.keys)
    end

    private

    def trials
      cert, key = Certificate.write(File.join(Paths::TMP, "tls"))
      { runs: (1..@rounds).to_a.product(@names).map do |round, name|
        trial("#{name} round #{round}", { server: name, round: round }) { one(name, cert, key) }
      end }
    end

    def settings_record
      { threads_per_process: THREADS, processes: [1], connections: CONNECTIONS, handshake_clients: CLIENTS,
        seconds: @seconds, rounds: @rounds, certificate: Certificate::KIND,
        s_time: Versions.command(%w[openssl version], /OpenSSL (\S+)/) }
    end

    def servers_record
      @names.map do |n|
        version = SERVERS[n][:runtime] == :spindle ? -> { Versions.spindle } : -> { Versions.gem("puma") }
        { name: n, family: n.start_with?("spindle") ? "spindle" : "peer", version: Versions.safely(version),
          engine: SERVERS[n][:engine] }
      end
    end

    def one(name, cert, key)
      tls_port = FreePort.pick
      bind = "ssl://127.0.0.1:#{tls_port}?cert=#{cert}&key=#{key}"
      target = Scenario.new(name: "tls", app: "hello.ru", path: "/", expect_body: "Hello World", env: nil)
      server = Memory.start(name: "tls-#{name}", runtime: SERVERS[name][:runtime], target: target,
                            threads: THREADS) { |l| command(name, l, bind) }
      url = "https://127.0.0.1:#{tls_port}/"
      Memory.wrk_run(url, connections: CONNECTIONS, duration: 1) # warm-up, discarded
      handshakes = handshake_rate(tls_port, server.launch.dir)
      keep_alive = Memory.wrk_run(url, connections: CONNECTIONS, duration: @seconds)
      Log.info(format("tls %-16s %7.0f handshakes/s  %8.0f keep-alive req/s", name, handshakes[:per_sec],
                      keep_alive[:requests_per_sec]))
      { command: server.command_line, handshakes: handshakes, keep_alive: keep_alive }
    ensure
      server&.stop
    end

    def command(name, launch, bind)
      if name == "puma"
        ["puma", "-q", "-t", launch.thread_range, "-w", "0", "-b", "tcp://#{launch.address}", "-b", bind, launch.rackup]
      else
        [RbConfig.ruby, "bin/spindle", "--engine", SERVERS[name][:engine], "-t", launch.thread_range,
         "-b", "tcp://#{launch.address}", "-b", bind, "-q", launch.rackup]
      end
    end

    # CLIENTS s_time processes for @seconds, each in its own process group,
    # killed past a deadline; the rate is their connections over the wall time.
    def handshake_rate(port, dir)
      argv = ["openssl", "s_time", "-connect", "127.0.0.1:#{port}", "-new", "-www", "/", "-time", @seconds.to_s]
      started = Child.now
      clients = Array.new(CLIENTS) do |i|
        out = File.join(dir, "s_time-#{i}.txt")
        [Process.spawn(*argv, out: out, err: [:child, :out], in: File::NULL, pgroup: true), out]
      end
      clients.each { |pid, _| Child.wait(pid, @seconds + 15) }
      wall = Child.now - started
      counts = clients.map { |_, out| File.read(out)[S_TIME] ? [Regexp.last_match(1).to_i, Regexp.last_match(2).to_i] : [0, 0] }
      connections = counts.sum(&:first)
      # s_time does not look at the status: a server that answered nothing is no figure.
      raise "openssl s_time read no response (#{File.read(clients.first.last).lines.last(2).join.strip})" if counts.map(&:last).max.to_i.zero?

      { connections: connections, seconds: wall.round(3), per_sec: (connections / wall).round(1),
        bytes_per_connection: counts.map(&:last).max, command: "#{argv.join(' ')}   # #{CLIENTS} at once" }
    end

    # ---- report ---------------------------------------------------------

    def self.by_server(record) = ok(record).group_by { |r| r[:server] }
    def self.median(runs, *path) = Stats.median(runs.map { |r| r.dig(*path) })

    def self.figures(record)
      by_server(record).to_h do |name, runs|
        [name, { handshakes: median(runs, :handshakes, :per_sec), keep_alive: median(runs, :keep_alive, :requests_per_sec),
                 runs: runs }]
      end
    end

    def self.headline(record)
      f = figures(record)
      puma = f["puma"]
      parts = f.reject { |n, _| n == "puma" }.map do |name, v|
        format("%s %s handshakes, %s keep-alive", name, F.times(v[:handshakes], puma&.dig(:handshakes)),
               F.times(v[:keep_alive], puma&.dig(:keep_alive)))
      end
      "vs Puma (TLS): #{parts.join('; ')}"
    end

    def self.markdown(record, json_name)
      s = record[:settings]
      firsts = ok(record).uniq { |r| r[:server] }
      P.page(P.title(record, json_name, goal_from: "issue 14"),
             P.run_table(record, [
               ["Handshakes", "#{s[:handshake_clients]} × `openssl s_time -new -www /` (OpenSSL #{s[:s_time]}) for #{s[:seconds]} s: " \
                              "a new connection and a full handshake per request, no session resumption"],
               ["Keep-alive", "wrk -t 1 -c #{s[:connections]} -d #{s[:seconds]}s on https://, after a discarded 1 s warm-up"],
               ["Servers", "one process, #{s[:threads_per_process]} threads where threads apply; certificate: #{s[:certificate]}"],
               ["Rounds", "#{s[:rounds]}, servers interleaved within each round; figures are medians over rounds"]
             ]),
             "## Result\n\n#{result_table(record)}",
             "## Versions\n\n#{record[:servers].map { |v| "- #{v[:name]}: #{v[:version]}" }.join("\n")}",
             P.listing("Failed", P.failed(record[:runs]) { |r| "#{r[:server]} round #{r[:round]}" }),
             "## Commands\n\n#{P.sh(firsts.map { |r| "# #{r[:server]}\n#{r[:command]}" } +
                                   [firsts.first&.dig(:handshakes, :command), "#{firsts.first&.dig(:keep_alive, :wrk)}   # keep-alive"].compact)}")
    end

    def self.result_table(record)
      f = figures(record)
      puma = f["puma"]
      rows = f.map do |name, v|
        errors = v[:runs].map { |r| r.dig(:keep_alive, :socket_errors) }.compact.uniq.join("; ")
        [name, F.rps(v[:handshakes]), F.times(v[:handshakes], puma&.dig(:handshakes)),
         F.rps(v[:keep_alive]), F.times(v[:keep_alive], puma&.dig(:keep_alive)),
         v[:runs].sum { |r| r.dig(:keep_alive, :non_2xx).to_i }, errors.empty? ? "0" : errors, v[:runs].size]
      end
      F.table(["server", "handshakes/s", "÷ Puma", "keep-alive req/s", "÷ Puma", "non-2xx", "socket errors", "rounds"], rows)
    end

    def self.chart(record)
      f = figures(record)
      chart = P.chart(record, "TLS: handshakes and keep-alive requests per second",
                      "hello app, one process · s_time × #{record[:settings][:handshake_clients]}, wrk -c #{record[:settings][:connections]}",
                      y_label: "per second", x_label: "")
      series = ->(key) { f.map { |name, v| { name: name, color: COLORS[name], values: [v[key]] } } }
      chart.panel("handshakes per second (new connection per request)", groups: ["handshakes/s"], series: series.call(:handshakes))
      chart.panel("keep-alive requests per second over TLS", groups: ["req/s"], series: series.call(:keep_alive))
      chart.render
    end

    # A throwaway self-signed certificate for 127.0.0.1, made at each run
    # (never committed): ECDSA P-256, what certbot issues by default.
    module Certificate
      KIND = "ECDSA P-256, self-signed"

      def self.write(dir)
        FileUtils.mkdir_p(dir)
        key = OpenSSL::PKey::EC.generate("prime256v1")
        cert = OpenSSL::X509::Certificate.new
        cert.version = 2
        cert.serial = 1
        cert.subject = cert.issuer = OpenSSL::X509::Name.parse("/CN=localhost")
        cert.public_key = key
        cert.not_before = Time.now - 60
        cert.not_after = Time.now + 86_400
        cert.sign(key, "SHA256")
        [File.join(dir, "cert.pem"), File.join(dir, "key.pem")].tap do |cert_path, key_path|
          File.write(cert_path, cert.to_pem)
          File.write(key_path, key.private_to_pem, perm: 0o600)
        end
      end
    end
  end
end

Bench::Scenario.define(
  name: "tls",
  title: "TLS: handshakes and keep-alive requests per second",
  description: "The hello app (`bench/apps/hello.ru`) behind each server's own TLS (an ssl:// bind), one process: " \
               "full handshakes per second with a new connection per request (`openssl s_time -new`), and " \
               "keep-alive requests per second over TLS (wrk on https://).",
  goal: "Spindle's engines against Puma with TLS: handshakes and keep-alive requests per second as ratios in one run.",
  app: "hello.ru",
  path: "/",
  processes: [1],
  connections: [Bench::TlsThroughput::CONNECTIONS],
  custom: Bench::TlsThroughput,
  quick: { servers: %w[spindle spindle-fibers puma], budget_s: 90 }
)
