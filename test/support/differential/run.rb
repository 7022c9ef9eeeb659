# frozen_string_literal: true

require_relative "corpus"
require_relative "compare"
require_relative "oracle"
require_relative "spindle_side"

module Differential
  # One rule that accounts for a class of disagreements: the kind, a pattern
  # for the refusing side's error (Spindle's for :spindle_stricter, the
  # oracle's otherwise), an optional test on the bytes of the message they
  # disagree on (to the end of the stream), optionally how the oracle ended
  # the stream, and the reason.
  Explanation = Struct.new(:kind, :error, :reason, :bytes, :oracle_tail, keyword_init: true) do
    def match?(d)
      side = d.kind == :spindle_stricter ? d.spindle : d.oracle
      kind == d.kind && (error.nil? || error.match?(side.error.to_s)) &&
        (bytes.nil? || bytes.call(d.message_bytes)) && (oracle_tail.nil? || oracle_tail == d.oracle.tail)
    end
  end

  # The corpus parsed by Spindle and by the oracle, and where they disagree.
  class Run
    attr_reader :cases

    def initialize(explanations: [], corpus: Corpus.new)
      @explanations = explanations
      @cases = corpus.cases
    end

    # [case, Spindle's framing, the oracle's framing] for every stream.
    def results
      @results ||= cases.zip(Oracle.frame_all(cases.map(&:bytes))).map do |c, o|
        [c, SpindleSide.frame(c.bytes), o]
      end
    end

    def disagreements
      @disagreements ||= results.filter_map { |c, s, o| Compare.disagreement(c.label, c.bytes, s, o) }
    end

    # Messages both parsers accepted and framed the same way.
    def messages_agreed
      results.sum { |_, s, o| s.messages.zip(o.messages).take_while { |a, b| b && a.framing == b.framing }.size }
    end

    def explanation(disagreement)
      @explanations.find { |e| e.match?(disagreement) }
    end

    def unexplained = disagreements.reject { |d| explanation(d) }

    def summary
      vectors = cases.count { |c| c.label == "test vector" }
      kinds = disagreements.map(&:kind).tally.map { |k, n| "#{k} #{n}" }.join(", ")
      "differential: #{cases.size} streams (#{vectors} test vectors, #{cases.size - vectors} generated) " \
        "vs llhttp #{Oracle.version} strict: #{cases.size - disagreements.size} agree " \
        "(#{messages_agreed} messages framed identically), " \
        "#{disagreements.size} disagree (#{kinds.empty? ? 'none' : kinds}), #{unexplained.size} unexplained"
    end
  end
end
