# frozen_string_literal: true

require "json"
require "open3"
require_relative "../lib/bench/memory" # and Child, WrkTrial
require_relative "../lib/bench/stats"
require_relative "../lib/bench/report/parts"

# Issue 67, item 3: 1,000 WebSockets held for a minute beside HTTP load, a
# broadcast to each, and the server's memory per idle WebSocket; every engine
# and Puma, one process and two.
module Bench
  module WebSockets
    HOLDER = File.expand_path("../lib/bench/clients/websocket_holder.rb", __dir__)

    # One server start: wrk alone; then the sockets opened (apps/websockets.ru
    # takes each with a full hijack) and held while wrk runs again; then a
    # broadcast, which every socket still open must receive. Memory (PSS of
    # the server's process tree) just before the sockets open and once they
    # are open gives the cost of one idle WebSocket.
    class Trial < WrkTrial
      def initialize(**)
        super
        @sockets = 1_000
        @alone = @settings.quick ? 2 : 10
        @hold = @settings.quick ? 3 : 60
      end

      def measure(connections)
        pid = @server.pgid
        alone = record(wrk(connections, @alone).run, connections)
        alone.merge(sockets_wanted: @sockets, hold_s: @hold, before: sample(pid), **hold(connections, pid))
      end

      private

      def sample(pid) = { pss_kib: Memory.tree_pss_kib(pid), fds: Memory.tree_fds(pid), threads: Memory.tree_threads(pid) }

      def hold(connections, pid)
        Open3.popen2(RbConfig.ruby, HOLDER, @server.launch.port.to_s, @sockets.to_s, pgroup: true) do |stdin, stdout, thread|
          ask = lambda do |command, timeout|
            stdin.puts(command) if command
            Child.read_json(stdout, timeout)
          end
          opened = ask.call(nil, 120) or return { held: { failed: "the WebSocket client did not report within 120 s" } }
          sleep 1 # let the server settle before sampling, as idle_connections does
          with = sample(pid)
          loaded = @server.alive? ? record(wrk(connections, @hold).run, connections) : { failed: "server exited: #{@server.death}" }
          { open: opened, with_sockets: with, under_sockets: loaded, after_hold: ask.call("status", 30),
            broadcast: ask.call("broadcast", 60), after: sample(pid), server_alive: @server.alive?,
            holder: "ruby bench/lib/bench/clients/websocket_holder.rb PORT #{@sockets}   # then: broadcast" }
        ensure
          stdin.puts("exit") rescue nil # rubocop:disable Style/RescueModifier
          stdin.close
          thread.join(30) or (Process.kill(:KILL, -thread.pid) rescue nil) # rubocop:disable Style/RescueModifier
        end
      rescue Wrk::Failed => e
        { under_sockets: { failed: e.message } }
      end
    end

    module Report
      include Bench::Report::Names
      module_function

      # [["server -w N", summary]], one row per server and process count.
      def figures(record)
        ok = record[:measurements].reject { |m| m[:failed] }
        ok.group_by { |m| [m[:processes], m[:server]] }.sort_by { |(p, _), _| p }.map do |(procs, server), rounds|
          ["#{server}#{procs > 1 ? " -w #{procs}" : ''}", summarize(rounds)]
        end
      end

      def summarize(rounds)
        under = rounds.map { |m| m[:under_sockets] }.compact.reject { |u| u[:failed] }
        per_socket = rounds.map do |m|
          opened = m.dig(:open, :opened).to_i
          next nil unless opened.positive? && m.dig(:with_sockets, :pss_kib)

          (m[:with_sockets][:pss_kib] - m[:before][:pss_kib]) * 1024.0 / opened
        end
        {
          rounds: rounds.size, wanted: rounds.first[:sockets_wanted], hold_s: rounds.first[:hold_s],
          opened: rounds.map { |m| m.dig(:open, :opened).to_i }, open_s: Stats.median(rounds.map { |m| m.dig(:open, :seconds) }),
          open_after: rounds.map { |m| m.dig(:after_hold, :open).to_i },
          received: rounds.map { |m| m.dig(:broadcast, :received).to_i },
          posts: rounds.map { |m| m.dig(:broadcast, :posts).to_i },
          workers: rounds.map { |m| (m.dig(:broadcast, :workers) || {}).values },
          rps_alone: Stats.median(rounds.map { |m| m[:requests_per_sec] }),
          p99_alone: Stats.median(rounds.map { |m| m[:latency_ms][:p99] }),
          rps_held: Stats.median(under.map { |u| u[:requests_per_sec] }),
          p99_held: Stats.median(under.map { |u| u[:latency_ms][:p99] }),
          errors_held: under.sum { |u| u[:errors].values.sum + u[:bad_status].to_i },
          pss_before: Stats.median(rounds.map { |m| m.dig(:before, :pss_kib) }),
          pss_with: Stats.median(rounds.map { |m| m.dig(:with_sockets, :pss_kib) }),
          threads_with: Stats.median(rounds.map { |m| m.dig(:with_sockets, :threads) }),
          bytes_per_socket: Stats.median(per_socket.compact),
          failures: rounds.filter_map { |m| m.dig(:under_sockets, :failed) || m.dig(:held, :failed) },
          alive: rounds.all? { |m| m.fetch(:server_alive, true) }
        }
      end

      def kib_per_socket(s) = s[:bytes_per_socket] ? format("%.1f", s[:bytes_per_socket] / 1024.0) : "–"

      def headline(record)
        figures(record).map do |name, s|
          "#{name} #{completes(s) == 'yes' ? '' : '(incomplete) '}#{kib_per_socket(s)} KiB/socket, " \
            "#{F.times(s[:rps_held], s[:rps_alone])} req/s"
        end.join("; ")
      end

      def completes(s)
        wanted = s[:wanted]
        checks = { "opened #{s[:opened].join('/')}" => s[:opened].all? { |o| o >= wanted },
                   "open after the hold #{s[:open_after].join('/')}" => s[:open_after].all? { |o| o >= wanted },
                   "received the broadcast #{s[:received].join('/')}" => s[:received].all? { |r| r >= wanted } }
        reasons = checks.reject { |_, ok| ok }.keys.map { |r| "#{r} of #{F.integer(wanted)}" }
        reasons.concat(s[:failures])
        reasons << "server exited" unless s[:alive]
        reasons.empty? ? "yes" : "**no**: #{reasons.join('; ')}"
      end

      def markdown(record, json_name, rows)
        m0 = record[:measurements].find { |m| m[:sockets_wanted] }
        wanted = m0 ? m0[:sockets_wanted] : 0
        head = [["WebSockets", "#{F.integer(wanted)} from 127.0.0.1, opened one after another by `bench/lib/bench/clients/websocket_holder.rb` " \
                               "(a real handshake each), taken by the app with a full `rack.hijack` and watched by one reader thread per process"],
                ["HTTP load", "wrk -c #{record[:settings][:connections].join(',')} GET / for #{m0 && m0[:seconds].round} s alone, " \
                              "then for #{m0 && m0[:hold_s]} s with the sockets held"],
                ["Broadcast", "after the hold: POST /broadcast, 4 at a time on new connections, until every open socket has had " \
                              "one, at most 20 POSTs; each worker broadcasts to its own sockets only"],
                ["Other jobs", other_jobs(record)]]
        table = F.table(["server", "completes", "open time s", "open after hold", "got broadcast", "POSTs (per worker sent)",
                         "req/s alone", "req/s with sockets", "× alone", "p99 ms alone", "p99 ms with sockets", "wrk errors",
                         "PSS before MiB", "PSS with sockets MiB", "**KiB per idle WebSocket**", "threads", "rounds"],
                        rows.map do |name, s|
                          [name, completes(s), s[:open_s], s[:open_after].join("/"), s[:received].join("/"),
                           s[:posts].zip(s[:workers]).map { |p, w| "#{p} (#{w.join('+')})" }.join(", "),
                           F.rps(s[:rps_alone]), F.rps(s[:rps_held]), F.times(s[:rps_held], s[:rps_alone]),
                           F.ms(s[:p99_alone]), F.ms(s[:p99_held]), s[:errors_held], F.mib_kib(s[:pss_before]),
                           F.mib_kib(s[:pss_with]), kib_per_socket(s), s[:threads_with], s[:rounds]]
                        end)
        load = P.load_rows(record).map { |what, value| what == "Threads" ? [what, value.sub(/1 process\z/, "1 and 2 processes")] : [what, value] }
        [P.title(record, json_name, goal_from: "issue 67, item 3"), P.run_table(record, load + head),
         "## Results\n\n#{table}", notes, P.failures(record),
         P.commands(record, record[:measurements].reject { |m| m[:failed] }.flat_map { |m| [m[:wrk], m[:holder]] }.compact)]
          .compact.join("\n\n") << "\n"
      end

      # The cores other work on the machine took while wrk measured (the
      # harness's `other`): this machine is shared.
      def other_jobs(record)
        cores = record[:measurements].flat_map { |m| [m.dig(:cpu, :other_cores), m.dig(:under_sockets, :cpu, :other_cores)] }.compact
        return "not recorded" if cores.empty?

        format("%.2f-%.2f of the %d cores went to other jobs during the wrk runs (the harness's `other`): the machine was " \
               "shared, so throughput and p99 moved with them", cores.min, cores.max, record[:machine][:nproc])
      end

      def notes
        <<~MD.chomp
          ## How to read this

          - The counts are the result: `open after hold` (sockets the client still had open after the
            hold under wrk), `got broadcast` (sockets that received a broadcast frame afterwards); each
            must equal the sockets opened.
          - `KiB per idle WebSocket` = (PSS of the server's process tree once the sockets are open, 1 s after
            the last handshake − PSS just before they were opened, after the first wrk run) ÷ sockets opened;
            the median of the rounds. It is the server's and the app's cost together: the hijacked socket,
            its Ruby IO and the app's registry entry. The kernel's socket buffers are not in PSS.
          - `× alone`: throughput with the sockets held ÷ throughput without, same start. The machine is
            shared (2 cores with wrk, the WebSocket client and other jobs, see "Other jobs"), and one round
            is one pair of runs: a ratio above 1 is that noise, not a gain. Read the ratios loosely and the
            absolute figures not at all; the counts and the memory are the result.
          - Memory grows in heap pages and malloc chunks, not per socket: with one round, a figure is good to
            a few KiB. With 2 processes each worker grows its own heap for its share, so the sum is higher.
          - `POSTs (per worker sent)`: one POST reaches one worker, which writes to its own sockets; the
            client posts until every socket has heard one, so with `-w 2` it takes 2 POSTs or more, and the
            numbers in brackets are the sockets each worker wrote to.
          - Once the app has hijacked a socket, the server has forgotten it: these figures measure the
            server's HTTP path beside an app that holds sockets. What each restart does to them is in
            docs/DEPLOY.md ("WebSockets").
        MD
      end

      # One bar per server in each group (1 process, 2 processes), so a
      # server keeps its colour.
      def chart(record, rows)
        chart = P.chart(record, "1,000 WebSockets beside HTTP load",
                        "#{record[:machine][:nproc]} cores shared with wrk, the WebSocket client and other jobs", y_label: "", x_label: "")
        by_server = rows.group_by { |name, _| name.split.first }
        group_of = ->(name) { name.include?(" -w ") ? "#{name[/\d+\z/]} processes" : "1 process" }
        groups = rows.map { |name, _| group_of.call(name) }.uniq
        pick = ->(list, group) { list.find { |name, _| group_of.call(name) == group }&.last }
        panel = lambda do |title, &value|
          chart.panel(title, groups: groups, series: by_server.map do |server, list|
            { name: server, color: Bench::Report::Chart::COLORS[server], values: groups.map { |g| (s = pick.call(list, g)) && value.call(s) } }
          end)
        end
        panel.call("KiB of server PSS per idle WebSocket") { |s| s[:bytes_per_socket] && (s[:bytes_per_socket] / 1024.0).round(1) }
        panel.call("req/s with the WebSockets held ÷ req/s alone (shared machine: noisy)") do |s|
          s[:rps_held] && s[:rps_alone]&.positive? ? (s[:rps_held] / s[:rps_alone]).round(2) : nil
        end
        chart.render
      end
    end
  end
end

Bench::Scenario.define(
  name: "websockets",
  title: "1,000 WebSockets beside HTTP load",
  description: "1,000 WebSockets from 127.0.0.1, taken by the app with a full rack.hijack, held for a minute while wrk " \
               "loads the same server, then a broadcast to each; throughput with and without them, and server memory " \
               "per idle WebSocket, one process and two.",
  goal: "Every socket stays open through the hold and receives the broadcast, on every engine, single and cluster; " \
        "memory per idle WebSocket; throughput beside them, against Puma on the same app.",
  app: "websockets.ru",
  path: "/",
  connections: [16],
  processes: [1, 2],
  expect_body: "Hello World",
  servers: %w[spindle-blocking spindle-threads spindle-fibers spindle-hybrid puma],
  trial: Bench::WebSockets::Trial,
  report: Bench::WebSockets::Report,
  quick: { servers: %w[spindle-threads puma], processes: [2], rounds: 1, budget_s: 75 } # and a 3 s hold, not 60 (the trial's own quick size)
)
