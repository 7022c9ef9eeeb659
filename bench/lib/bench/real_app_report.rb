# frozen_string_literal: true

require_relative "report/format"
require_relative "report/other_ruby"
require_relative "summary"
require_relative "profile"

module Bench
  # The real-app scenarios' own page sections (rails, rails-show, blog),
  # before the generic tables: each server against Puma and Falcon, as the
  # issue's targets are put (≥ 1.2× / 1.3× Puma with p99 ≤ Puma's, fibers ≥
  # 1.3× Falcon); the same table from the newest run on the other Ruby
  # (Report::OtherRuby), so the page holds 3.1 and 3.3 both; and, from a
  # --profile run, where each server's CPU went.
  module RealAppReport
    F = Report::Format
    # Peer => its label. puma-jemalloc is Puma on Spindle's default allocator.
    PEERS = { "puma" => "Puma", "puma-jemalloc" => "Puma on jemalloc", "falcon" => "Falcon" }.freeze

    module_function

    def sections(summary) = [against_peers(summary), other_ruby(summary), profile(summary)].compact

    def against_peers(summary, heading: nil)
      present = PEERS.select { |name, _| summary.server_names.include?(name) }
      rows = summary.processes.product(summary.connections).flat_map do |procs, c|
        figures = summary.figures(procs, c)
        peers = present.to_h { |name, _| [name, figures.find { |f| f.server == name }] }
        figures.map do |f|
          [f.server, procs, c, F.throughput(f), F.ms(f.p99),
           *present.keys.flat_map { |name| [F.ratio(summary.ratio(f, peers[name])), p99_verdict(f, peers[name])] }]
        end
      end
      header = ["server", "processes", "c", "req/s (median)", "p99 ms", *present.values.flat_map { |l| ["× #{l}", "p99 vs #{l}"] }]
      "#{heading || "## Against #{present.values.join(', ')}"}\n\nEvery server under the same bundle, database and pool. Medians of the rounds; " \
        "a ratio marked ≥ or ≤ has a load-generator-bound side.\n\n#{F.table(header, rows)}"
    end

    def other_ruby(summary)
      path, record = Report::OtherRuby.newest(summary)
      return nil unless record

      yjit = record.dig(:machine, :yjit, :enabled_for_servers) ? "on" : "off"
      heading = "## On Ruby #{Report::OtherRuby.minor(record)} (YJIT #{yjit}): the newest run there\n\n" \
                "From [data/#{File.basename(path)}](data/#{File.basename(path)}), #{record[:started_at]}; " \
                "#{record.dig(:machine, :ruby)}."
      against_peers(Summary.new(record), heading: heading)
    end

    def p99_verdict(figure, peer)
      return "–" unless peer && figure.p99 && peer.p99 && !figure.equal?(peer)

      figure.p99 <= peer.p99 ? "≤ (#{F.ms(peer.p99)})" : "> (#{F.ms(peer.p99)})"
    end

    # Per server and cell: the profiled windows of every round, summed.
    def profile(summary)
      rows = summary.processes.product(summary.connections).flat_map do |procs, c|
        summary.server_names.filter_map do |name|
          splits = summary.rounds(name, procs, c).filter_map { |m| m[:profile] }
          profile_row(name, procs, c, Profile.sum(splits)) unless splits.empty?
        end
      end
      return nil if rows.empty?

      header = ["server", "processes", "c", "samples", "server code", "app code", "GC", "other", "innermost server frames (samples)"]
      "## Where the time goes\n\nStackProf (CPU mode, 1 ms) in every process of the server, during a second wrk run as long " \
        "as the measured one, right after it (its figure is not reported). Server code: lib/spindle, Rack, each " \
        "peer's own gems; app code: Rails, pg and the app; time in C methods and Ruby's library counts for its " \
        "caller (bench/lib/bench/profile_split.rb).\n\n#{F.table(header, rows)}"
    end

    def profile_row(name, procs, c, sum)
      share = ->(k) { sum[:samples].positive? ? format("%.1f %%", 100.0 * sum[k] / sum[:samples]) : "–" }
      top = sum[:top_server].first(3).map { |frame, n| "#{frame} (#{n})" }.join(", ")
      [name, procs, c, sum[:samples], share.call(:server), share.call(:app), share.call(:gc), share.call(:other), top]
    end
  end
end
