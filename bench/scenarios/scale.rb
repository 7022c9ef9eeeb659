# frozen_string_literal: true

require_relative "../lib/bench/custom_scenario"
require_relative "../lib/bench/server_process"
require_relative "../lib/bench/setup"
require_relative "../lib/bench/wrk"
require_relative "../lib/bench/wrk_trial"
require_relative "../../test/support/topology"

module Bench
  # Issue 15: requests per second through a load balancer with 1, 2 and 3
  # hosts, Spindle hosts and Puma hosts, in one run, and the balancer's own
  # ceiling against a static response. Everything runs in the multi-host
  # topology of the tests (test/support/topology.rb: network namespaces on
  # this machine, nginx from docs/deploy/nginx.conf), wrk in the client
  # namespace. The hosts share the machine's cores with each other, nginx
  # and wrk, so what a second and third host can add is bounded by the cores
  # left: the page says so beside the figures.
  class Scale < CustomScenario
    HOST_COUNTS = [1, 2, 3].freeze
    WORKERS = 2
    THREADS = 5
    CONNECTIONS = 64
    # The ceiling: the same nginx, answering by itself what the app answers.
    STATIC = <<~NGINX
      worker_processes auto;
      events { worker_connections 4096; }
      http {
          access_log off;
          server {
              listen {{listen}} backlog=4096;
              location / { default_type text/plain; return 200 "Hello World"; }
          }
      }
    NGINX

    def initialize(scenario, settings)
      super
      @rounds = settings.quick ? 1 : settings.rounds
      @backends = picked(BACKENDS)
      @duration = settings.duration
      @warmup = settings.warmup
    end

    private

    def trials
      reason = Topology.unavailable_reason
      raise "the scale scenario needs network namespaces: #{reason}" if reason

      Setup.bundle!(Paths::GEMFILE) if @backends.include?("puma")
      Topology.open(hosts: HOST_COUNTS.max) do |topology|
        runs = (1..@rounds).flat_map do |round|
          [trial("nginx static, round #{round}", { backend: "nginx-static", hosts: 0, round: round }) { ceiling(topology) }] +
            @backends.flat_map { |backend| backend_trials(topology, backend, round) }
        end
        { runs: runs }
      end
    end

    # One start of three hosts, then nginx in front of 1, 2, 3 of them.
    def backend_trials(topology, backend, round)
      started = start_hosts(topology, backend)
      HOST_COUNTS.map do |count|
        trial("#{backend} × #{count}, round #{round}", { backend: backend, hosts: count, round: round }) do
          through_nginx(topology, topology.hosts.first(count))
        end
      end
    ensure
      started&.each_value { |process| topology.stop(process) }
    end

    def start_hosts(topology, backend)
      app = File.join(Paths::APPS, "hello.ru")
      env = ServerProcess::BASE_ENV
      if backend == "spindle"
        return topology.start_spindles(app, "-t", "#{THREADS}:#{THREADS}", "--engine", "threads", workers: WORKERS,
                                                                                                    env: env.merge("BUNDLE_GEMFILE" => Paths::SERVER_GEMFILE))
      end

      topology.hosts.to_h do |host|
        command = ["bundle", "exec", "puma", "-q", "-t", "#{THREADS}:#{THREADS}", "-w", WORKERS.to_s,
                   "-b", "tcp://#{topology.address(host)}:#{Topology::PORT}", "apps/hello.ru"]
        [host, topology.start_host_command(host, command, env: env.merge("BUNDLE_GEMFILE" => Paths::GEMFILE), chdir: Paths::BENCH)]
      end
    end

    def through_nginx(topology, hosts)
      topology.start_lb(:nginx, hosts: hosts)
      measure(topology).merge(config: "docs/deploy/nginx.conf")
    ensure
      topology.stop_lb
    end

    def ceiling(topology)
      config = Topology::LbConfig.new(:nginx, listen: "#{topology.address(:lb)}:#{Topology::LB_PORT}", hosts: [],
                                              dir: topology.dir, template: STATIC)
      topology.start_lb(:nginx, config: config)
      measure(topology).merge(config: STATIC)
    ensure
      topology.stop_lb
    end

    # A discarded warm-up, then one measurement, both with wrk in the client
    # namespace against the balancer.
    def measure(topology)
      wrk(topology, @warmup)
      argv, result = wrk(topology, @duration)
      figures = Memory.wrk_figures(result)
      Log.info(format("scale: %8.0f req/s", figures[:requests_per_sec]))
      figures.merge(wrk: WrkTrial.command_line(argv))
    end

    def wrk(topology, duration)
      argv = ["wrk", "-t", @settings.wrk_threads.to_s, "-c", CONNECTIONS.to_s, "-d", "#{duration}s", "--timeout", "5s",
              "--latency", "-s", Wrk::SCRIPT, "#{topology.lb_url}/"]
      out, err, status = topology.run(:client, *argv, timeout: duration + Wrk::GRACE)
      [argv, Wrk.parse(out + err, status)]
    end

    # The hosts' servers (--servers picks among them): their runtime, as in
    # bench/servers.rb (bench/run installs the peers' bundle for :peers), and
    # what each host runs, for the page (ADDR: the host's address).
    SERVERS = {
      "spindle" => { runtime: :spindle,
                     command: "bin/spindle -w #{WORKERS} -t #{THREADS}:#{THREADS} --engine threads -b tcp://ADDR:9292 " \
                              "--control unix://RUN/hN.control.sock bench/apps/hello.ru" },
      "puma" => { runtime: :peers,
                  command: "(cd bench && bundle exec puma -q -t #{THREADS}:#{THREADS} -w #{WORKERS} -b tcp://ADDR:9292 apps/hello.ru)" }
    }.freeze
    BACKENDS = SERVERS.keys.freeze

    def settings_record
      { host_commands: SERVERS.slice(*@backends).transform_values { |s| s[:command] }, rounds: @rounds, duration_s: @duration, warmup_s: @warmup, connections: CONNECTIONS, workers_per_host: WORKERS,
        threads_per_worker: THREADS, host_counts: HOST_COUNTS, backends: @backends, quick: @settings.quick,
        processes: [WORKERS] }
    end

    def servers_record
      [{ name: "spindle", family: "spindle", version: Versions.spindle },
       { name: "puma", family: "peer", version: Versions.gem("puma") },
       { name: "nginx", family: "ceiling", version: Versions.command(%w[nginx -v], %r{nginx/(\S+)}) }]
    end

    # ---- report ---------------------------------------------------------

    def self.med(runs) = Stats.median(runs.map { |r| r[:requests_per_sec] })

    def self.figures(record)
      ok(record).group_by { |r| [r[:backend], r[:hosts]] }.transform_values { |runs| med(runs) }
    end

    def self.headline(record)
      f = figures(record)
      parts = BACKENDS.filter_map do |b|
        one = f[[b, 1]] or next
        "#{b} #{HOST_COUNTS.map { |n| f[[b, n]] ? format('%.2f×', f[[b, n]] / one) : '–' }.join(' / ')}"
      end
      "req/s with 1 / 2 / 3 hosts, relative to 1: #{parts.join('; ')}; nginx static ceiling #{F.rps(f[['nginx-static', 0]])}"
    end

    def self.markdown(record, json_name)
      s = record[:settings]
      m = record[:machine]
      f = figures(record)
      ceiling = f[["nginx-static", 0]]
      rows = BACKENDS.flat_map do |b|
        HOST_COUNTS.filter_map do |n|
          rps = f[[b, n]] or next
          [b, n, F.rps(rps), f[[b, 1]] ? format("%.2f×", rps / f[[b, 1]]) : "–", ceiling ? format("%.2f", rps / ceiling) : "–",
           ok(record).select { |r| r[:backend] == b && r[:hosts] == n }.sum { |r| r[:non_2xx].to_i }]
        end
      end
      rows << ["nginx `return 200` (the ceiling)", "–", F.rps(ceiling), "–", "1.00", 0] if ceiling
      table = F.table(["behind nginx", "hosts", "req/s (median)", "÷ 1 host", "÷ ceiling", "non-2xx"], rows)
      P.page(P.title(record, json_name, goal_from: "issue 15"),
             P.run_table(record, [
               ["Topology", "network namespaces on this machine (test/support/topology.rb): a client, a load balancer (nginx, " \
                            "docs/deploy/nginx.conf) and #{s[:host_counts].max} hosts on one bridge"],
               ["Hosts", "#{s[:workers_per_host]} workers × #{s[:threads_per_worker]} threads each: `bin/spindle -w #{s[:workers_per_host]} " \
                         "-t #{s[:threads_per_worker]}:#{s[:threads_per_worker]}` and `puma -w #{s[:workers_per_host]} -t #{s[:threads_per_worker]}:#{s[:threads_per_worker]}`, bench/apps/hello.ru"],
               ["Load", "#{record[:load_generator][:tool]} in the client namespace, -c #{s[:connections]}, keep-alive, " \
                        "#{s[:duration_s]} s after #{s[:warmup_s]} s of warm-up; #{s[:rounds]} round(s), medians"]
             ]),
             "## Result\n\n#{table}\n\n#{format(NOTES, nproc: m[:nproc])}",
             P.listing("Failed", P.failed(record[:runs]) { |r| "#{r[:backend]} × #{r[:hosts]} round #{r[:round]}" }),
             "## Commands\n\n#{P.sh([*(s[:host_commands] || {}).map { |b, c| "# #{b}, in each host's namespace\n#{c}" },
                                     "# in the client namespace\n#{ok(record).first&.dig(:wrk)}"])}\n\n" \
             "nginx runs docs/deploy/nginx.conf with a `server` line per host; the ceiling runs:\n\n```nginx\n#{STATIC.chomp}\n```")
    end

    def self.chart(record)
      f = figures(record)
      chart = P.chart(record, "Requests per second through nginx with 1, 2, 3 hosts",
                      "hello app, wrk -c #{record[:settings][:connections]} · ceiling: nginx answering by itself",
                      y_label: "requests/s", x_label: "hosts")
      chart.panel("through nginx", groups: HOST_COUNTS.map(&:to_s),
                                   series: BACKENDS.select { |b| f[[b, 1]] }.map { |b| { name: b, values: HOST_COUNTS.map { |n| f[[b, n]] } } })
      chart.render
    end

    NOTES = <<~MD.chomp
      - Every host, nginx and wrk share this machine's %<nproc>s cores: a second host adds processes, not cores, so
        the ratios show what the balancer and the hosts' scheduling cost, not what more machines would add. The
        ceiling is nginx itself, with nothing behind it, on the same cores with the same wrk.
      - Figures are medians over rounds; each backend's three hosts are started once per round and put behind nginx
        one, two and three at a time.
    MD
  end
end

Bench::Scenario.define(
  name: "scale",
  title: "Several hosts behind nginx",
  description: "Requests per second through nginx (docs/deploy/nginx.conf) to 1, 2 and 3 hosts, each a network " \
               "namespace on this machine running the hello app with 2 workers; Spindle hosts and Puma hosts in the same " \
               "run; and nginx's own ceiling answering by itself.",
  goal: "Ratios for 2 and 3 hosts against 1, for Spindle and Puma, in the same run, and the balancer's own ceiling.",
  app: "hello.ru",
  path: "/",
  processes: [Bench::Scale::WORKERS],
  connections: [Bench::Scale::CONNECTIONS],
  custom: Bench::Scale,
  quick: { servers: %w[spindle puma] } # Scale's own names; 1 round of 1 s measurements
)
