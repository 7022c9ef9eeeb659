# frozen_string_literal: true

require "json"
require "tempfile"
require_relative "../lib/bench/memory" # and Child, WrkTrial
require_relative "../lib/bench/stats"
require_relative "../lib/bench/report/parts"

# Issue 5 / BENCHMARKS.md #10: a bounded soak of one process — up to a
# million requests, 1 in 10 malformed — with RSS, descriptors and threads
# sampled as it goes. Run it with --rounds 1: each round is a whole soak.
module Bench
  module Soak
    SCRIPT = File.expand_path("../lib/bench/soak.lua", __dir__)
    BAD_CLIENT = File.expand_path("../lib/bench/clients/bad_client.rb", __dir__)
    SEGMENTS = 20
    QUICK_SEGMENTS = 5
    BAD_SHARE = 10 # 1 request in 10 is malformed
    TIME_BUDGET = 600 # seconds: segments stop being started past this

    # One server start: SEGMENTS segments, each wrk sending its share of valid
    # requests on keep-alive connections while bad_client.rb sends the
    # malformed ones, each on a new connection; after each segment, once the
    # server's descriptor count has settled, RSS, fds and threads are sampled.
    class Trial < WrkTrial
      def initialize(**)
        super
        @total = settings.quick ? 20_000 : 1_000_000
        @segments = settings.quick ? QUICK_SEGMENTS : SEGMENTS
      end

      def measure(connections)
        pid = @server.pgid
        baseline = settle_and_sample(pid, nil, 0, 0)
        segments = []
        started = Child.now
        per_segment = @total / @segments
        @segments.times do |i|
          break if Child.now - started > TIME_BUDGET || @settings.deadline&.passed?
          break unless @server.alive?

          segments << segment(i, connections, per_segment, baseline, segments.last)
        end
        summarize(connections, baseline, segments, Child.now - started)
      end

      private

      def segment(index, connections, size, baseline, previous)
        bad = size / BAD_SHARE
        valid = size - bad
        client = Tempfile.create("bench-bad") do |out|
          cpid = Process.spawn(RbConfig.ruby, BAD_CLIENT, @server.launch.port.to_s, bad.to_s, "16",
                               out: out, err: out, in: File::NULL, pgroup: true)
          run = wrk(connections, 120, threads: 1, script: SCRIPT, script_args: [valid]).run
          status = Child.wait(cpid, 120)
          out.rewind
          text = out.read
          [run, status, (JSON.parse(text.lines.last.to_s, symbolize_names: true) rescue { error: text[-300..] })] # rubocop:disable Style/RescueModifier
        end
        run, status, bad_result = client
        r = run.result
        done_valid = (previous ? previous[:valid_total] : 0) + r[:requests]
        done_bad = (previous ? previous[:bad_total] : 0) + bad_result[:sent].to_i
        sample = settle_and_sample(@server.pgid, baseline, done_valid, done_bad)
        sample.merge(segment: index + 1, wrk_requests: r[:requests], wrk_seconds: (r[:duration_us] / 1e6).round(3),
                     wrk_non_2xx: r[:status_errors], wrk_socket_errors: r[:connect_errors] + r[:read_errors] + r[:write_errors] + r[:timeouts],
                     p50_ms: (r[:p50_us] / 1000.0).round(3), p99_ms: (r[:p99_us] / 1000.0).round(3), p999_ms: (r[:p999_us] / 1000.0).round(3), max_ms: (r[:max_us] / 1000.0).round(3),
                     bad: bad_result, bad_client_exit: status&.exitstatus,
                     wrk: run.argv.map { |a| a.start_with?(Paths::BENCH) ? Paths.relative(a) : a }.join(" ").sub(%r{127\.0\.0\.1:\d+}, "127.0.0.1:PORT"))
      end

      # Waits (at most 10 s) for the descriptor count to come back within 2
      # of the baseline once the clients have gone, then samples.
      def settle_and_sample(pid, baseline, valid, bad)
        start = Child.now
        fds = Memory.tree_fds(pid)
        while baseline && fds > baseline[:fds] + 2 && Child.now - start < 10
          sleep 0.1
          fds = Memory.tree_fds(pid)
        end
        { valid_total: valid, bad_total: bad, requests_total: valid + bad, rss_kib: Memory.tree_rss_kib(pid), fds: fds,
          threads: Memory.tree_threads(pid), settle_s: (Child.now - start).round(2), alive: @server.alive? }
      end

      def summarize(connections, baseline, segments, elapsed)
        wrk_seconds = segments.sum { |s| s[:wrk_seconds] }
        valid = segments.sum { |s| s[:wrk_requests] }
        {
          connections: connections,
          requests_per_sec: wrk_seconds.positive? ? (valid / wrk_seconds).round(1) : 0,
          requests: valid, seconds: wrk_seconds.round(3),
          latency_ms: { p50: Stats.median(segments.map { |s| s[:p50_ms] }).to_f,
                        p99: Stats.median(segments.map { |s| s[:p99_ms] }).to_f,
                        p999: Stats.median(segments.map { |s| s[:p999_ms] }).to_f,
                        max: segments.map { |s| s[:max_ms] }.max.to_f },
          errors: { socket: segments.sum { |s| s[:wrk_socket_errors] } }, # medians/sums over the segments
          bad_status: segments.sum { |s| s[:wrk_non_2xx] }, cpu: nil, load_generator_bound: false,
          soak: { target_requests: @total, segments_planned: @segments, elapsed_s: elapsed.round(1), baseline: baseline, segments: segments },
          wrk: segments.first&.dig(:wrk)
        }
      end
    end

    module Report
      include Bench::Report::Names
      module_function

      def figures(record) = record[:measurements].find { |x| x[:soak] }

      def headline(record)
        m = figures(record) or return "no soak figure"
        v = verdict(m)
        return "no segment ran" if v.empty?

        "#{F.integer(v[:last][:requests_total])} requests: #{v[:alive] ? 'no crash' : 'CRASHED'}, RSS #{F.mib_kib(v[:warm][:rss_kib])} → " \
          "#{F.mib_kib(v[:last][:rss_kib])} MiB after warm-up, fds #{m[:soak][:baseline][:fds]} → #{v[:last][:fds]}"
      end

      def verdict(m)
        soak = m[:soak]
        segs = soak[:segments]
        return {} if segs.empty?

        warm = segs[[segs.size / 10, 1].max - 1] # the end of the first tenth: warm-up
        last = segs.last
        half = segs[segs.size / 2..]
        xs = half.map { |s| s[:requests_total].to_f }
        ys = half.map { |s| s[:rss_kib].to_f }
        slope = fit(xs, ys) # KiB per request over the second half
        bad = Hash.new(0)
        segs.each { |s| (s.dig(:bad, :statuses) || {}).each { |k, v| bad[k.to_s] += v } }
        { warm: warm, last: last, slope_kib_per_100k: slope && (slope * 100_000).round(1),
          rss_growth_after_warmup_kib: last[:rss_kib] - warm[:rss_kib],
          rss_max_kib: segs.map { |s| s[:rss_kib] }.max, rss_min_after_warmup_kib: segs.drop(segs.index(warm)).map { |s| s[:rss_kib] }.min,
          fds_back: last[:fds] <= soak[:baseline][:fds] + 2, threads_back: last[:threads] <= soak[:baseline][:threads] + 2,
          bad_statuses: bad, bad_timeouts: segs.sum { |s| s.dig(:bad, :timeouts).to_i },
          bad_not_closed: segs.sum { |s| s.dig(:bad, :sent).to_i - s.dig(:bad, :closed_by_server).to_i - s.dig(:bad, :connect_errors).to_i },
          second_responses: segs.sum { |s| s.dig(:bad, :second_response_seen).to_i },
          alive: segs.all? { |s| s[:alive] } }
      end

      def fit(xs, ys)
        return nil if xs.size < 2

        mx = xs.sum / xs.size
        my = ys.sum / ys.size
        den = xs.sum { |x| (x - mx)**2 }
        den.zero? ? nil : xs.zip(ys).sum { |x, y| (x - mx) * (y - my) } / den
      end

      def markdown(record, json_name, m)
        return [P.title(record, json_name), P.failures(record)].compact.join("\n\n") << "\n" unless m

        soak = m[:soak]
        v = verdict(m)
        base = soak[:baseline]
        segs = soak[:segments]
        total = segs.last ? segs.last[:requests_total] : 0
        head = [["Soak", "#{F.integer(total)} requests (#{F.integer(segs.last&.dig(:valid_total).to_i)} valid, #{F.integer(segs.last&.dig(:bad_total).to_i)} malformed) " \
                         "of #{F.integer(soak[:target_requests])} planned, in #{segs.size} segments, #{soak[:elapsed_s]} s"],
                ["Valid", "wrk -c #{m[:connections]}, keep-alive, GET /, stopped after its count by bench/lib/bench/soak.lua"],
                ["Malformed", "bench/lib/bench/clients/bad_client.rb (16 threads), 1 in #{BAD_SHARE}: #{(segs.first&.dig(:bad, :per_vector) || {}).size} vectors from shared/BAD_INPUTS.md, each on a new connection followed by a valid request that must not be answered; concurrent with wrk"],
                ["Sampled", "after every segment (every #{F.integer(soak[:target_requests] / (soak[:segments_planned] || SEGMENTS))} requests), once the server's fd count settled: VmRSS of the process, /proc/PID/fd, /proc/PID/task"]]
        rows = [["before (after warm-up)", 0, F.mib_kib(base[:rss_kib]), base[:fds], base[:threads], "–", "–", "–"]] +
               segs.map do |s|
                 [s[:segment], F.integer(s[:requests_total]), F.mib_kib(s[:rss_kib]), s[:fds], s[:threads], F.rps(s[:wrk_requests] / s[:wrk_seconds]),
                  F.ms(s[:p99_ms]), s[:wrk_non_2xx] + s[:wrk_socket_errors]]
               end
        table = F.table(["segment", "requests so far", "RSS MiB", "fds", "threads", "valid req/s", "valid p99 ms", "wrk errors"], rows)
        verdicts = <<~MD.chomp
          ## Verdict

          | check | result |
          | --- | --- |
          | no crash | #{v[:alive] ? 'yes: the process served to the end' : '**no**: the server exited (see Failed)'} |
          | RSS after warm-up (end of segment #{v[:warm]&.dig(:segment)}) → end | #{F.mib_kib(v[:warm]&.dig(:rss_kib))} → #{F.mib_kib(v[:last]&.dig(:rss_kib))} MiB (#{v[:rss_growth_after_warmup_kib]} KiB; max #{F.mib_kib(v[:rss_max_kib])} MiB) |
          | RSS trend over the second half (least squares) | #{v[:slope_kib_per_100k]} KiB per 100,000 requests |
          | fds before → after | #{base[:fds]} → #{v[:last]&.dig(:fds)} (#{v[:fds_back] ? 'back to baseline' : '**not back**'}) |
          | threads before → after | #{base[:threads]} → #{v[:last]&.dig(:threads)} (#{v[:threads_back] ? 'back to baseline' : '**not back**'}) |
          | malformed requests: answers | #{v[:bad_statuses].sort.map { |k, n| "#{k}: #{F.integer(n)}" }.join(', ')} |
          | malformed: server closed the connection | all but #{v[:bad_not_closed]}; #{v[:bad_timeouts]} waited > 5 s |
          | a second response after a malformed request (smuggling) | #{v[:second_responses]} |
        MD
        per_vector = (segs.first&.dig(:bad, :per_vector) || {}).keys.join(", ")
        [P.title(record, json_name), P.run_table(record, P.load_rows(record) + head), verdicts,
         "## Samples\n\n#{table}", "Malformed vectors (cycled): #{per_vector}.",
         P.failures(record),
         P.commands(record, [segs.first&.dig(:wrk), "ruby bench/lib/bench/clients/bad_client.rb PORT #{soak[:target_requests] / (soak[:segments_planned] || SEGMENTS) / BAD_SHARE} 16   # beside each wrk segment"].compact)]
          .compact.join("\n\n") << "\n"
      end

      def chart(record, m)
        chart = P.chart(record, "Soak: one Spindle process, valid and malformed requests", "#{record[:machine][:nproc]} cores shared with wrk and the malformed-request client",
                        y_label: "", x_label: "requests so far (thousands)")
        return chart.render unless m

        segs = m[:soak][:segments]
        groups = ["0"] + segs.map { |s| (s[:requests_total] / 1000).to_s }
        base = m[:soak][:baseline]
        chart.panel("RSS of the server, MiB", groups: groups,
                    series: [{ name: "RSS MiB", color: "#3182bd", values: [base[:rss_kib], *segs.map { |s| s[:rss_kib] }].map { |k| (k / 1024.0).round(1) } }])
        chart.panel("Open file descriptors of the server", groups: groups,
                    series: [{ name: "fds", color: "#e6550d", values: [base[:fds], *segs.map { |s| s[:fds] }] }])
        chart.render
      end
    end
  end
end

Bench::Scenario.define(
  name: "soak",
  title: "Soak: a million requests, 1 in 10 malformed",
  description: "One Spindle process (threads engine) receives valid GET / on keep-alive connections (wrk) and, " \
               "beside them, malformed requests from shared/BAD_INPUTS.md, each on its own connection. RSS, open " \
               "descriptors and threads are sampled every 50,000 requests.",
  goal: "No crash, RSS flat after warm-up, descriptors and threads back to their baseline.",
  app: "hello.ru",
  path: "/",
  connections: [16],
  processes: [1],
  expect_body: "Hello World",
  servers: %w[spindle-threads],
  trial: Bench::Soak::Trial,
  report: Bench::Soak::Report,
  quick: { rounds: 1 } # each round is a whole soak (the trial's quick size: 20,000 requests)
)
