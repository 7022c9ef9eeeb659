# frozen_string_literal: true

require_relative "../test_helper"
require_relative "../support/differential/run"

# Differential parsing (docs/FUZZING.md): a generated corpus of valid and
# malformed request streams is framed by Spindle and by llhttp, Node's strict
# parser, with every leniency off. Where the two disagree, Spindle is wrong
# unless a row below says why; a disagreement no row explains fails the test.
# See it all with: ruby -Ilib -Itest test/support/differential/report.rb
class DifferentialTest < Minitest::Test
  E = Differential::Explanation

  # The refused message starts with a method token that llhttp does not know
  # (any RFC 9110 token: lower-case, digits, "_" and the other tchars too).
  UNKNOWN_METHOD = lambda do |bytes|
    method = bytes[/\A(?:\r\n)*([!#$%&'*+\-.^_`|~0-9A-Za-z]+) /, 1]
    method && !Differential::Oracle.methods.include?(method)
  end
  # A chunk line of that message has blanks around its extension's ';' or '='.
  BLANKS_IN_CHUNK_EXT = ->(bytes) { bytes.match?(/\r\n\h+(?:[ \t]+;|;[^\r\n]*[ \t])[^\r\n]*\r\n/) }
  # That message's trailer section holds a Content-Length field.
  LENGTH_IN_TRAILER = ->(bytes) { bytes.match?(/\r\n0[^\r\n]*\r\n(?:[^\r\n]*\r\n)*?content-length\s*:/i) }
  HEAD_NOT_ENDED = ->(bytes) { !bytes.include?("\r\n\r\n") }
  # That message's Transfer-Encoding list ends in chunked and then empty elements ("chunked ,").
  EMPTY_AFTER_CHUNKED = ->(bytes) { bytes.match?(/\r\ntransfer-encoding:[^\r\n]*chunked[ \t]*,[ \t,]*\r\n/i) }

  EXPLAINED = [
    # Spindle refuses what llhttp takes: it checks more of RFC 9110/9112, or enforces a limit.
    E.new(kind: :spindle_stricter, error: /missing Host/,
          reason: "RFC 9112 §3.2: a server MUST answer 400 to an HTTP/1.1 request without Host"),
    E.new(kind: :spindle_stricter, error: /duplicate Host/,
          reason: "RFC 9112 §3.2: a server MUST answer 400 to a request with more than one Host"),
    E.new(kind: :spindle_stricter, error: /invalid Host|bad authority/,
          reason: "RFC 9112 §3.2, RFC 9110 §4.2: a Host or target authority must be uri-host [\":\" port]; " \
                  "userinfo and an empty http host are errors (§4.2.1, §4.2.4)"),
    E.new(kind: :spindle_stricter, error: /bare LF in head|bare CR in head/,
          reason: "RFC 9112 §2.2: a bare CR or LF MAY be taken as a line end; Spindle takes CRLF only"),
    E.new(kind: :spindle_stricter, error: /malformed HTTP version|malformed request line/,
          reason: "RFC 9112 §3: request-line = method SP request-target SP HTTP-version; " \
                  "no extra blanks, no HTTP/0.9 simple request"),
    E.new(kind: :spindle_stricter, error: /HTTP version not supported/,
          reason: "RFC 9110 §15.6.6: 505 for a major version other than 1 (llhttp accepts 0.9 and 2.0)"),
    E.new(kind: :spindle_stricter, error: /bad request target|bad asterisk-form/,
          reason: "RFC 9112 §3.2: no fragment in a target, absolute-form http(s) only, '*' for OPTIONS only"),
    E.new(kind: :spindle_stricter, error: /CONNECT is not supported/,
          reason: "RFC 9110 §9.3.6, §15.6.2: Spindle is not a tunnel; 501 for CONNECT"),
    E.new(kind: :spindle_stricter, error: /unsupported expectation/,
          reason: "RFC 9110 §10.1.1: 417 for an expectation other than 100-continue"),
    E.new(kind: :spindle_stricter, error: /Transfer-Encoding in HTTP\/1.0/,
          reason: "RFC 9112 §6.1: an HTTP/1.0 message with Transfer-Encoding has faulty framing"),
    E.new(kind: :spindle_stricter, error: /invalid Transfer-Encoding|unsupported transfer coding/,
          reason: "RFC 9112 §6.1: codings other than a single final chunked are refused (400, or 501 for " \
                  "an unknown coding); empty list elements are skipped (RFC 9110 §5.6.1.2), but a field line " \
                  "of nothing else is refused"),
    E.new(kind: :spindle_stricter, error: /invalid chunk extension/,
          reason: "RFC 9112 §7.1.1: chunk-ext names and values must match the grammar (no empty name or value)"),
    E.new(kind: :spindle_stricter, error: /chunk size too large|invalid Content-Length/,
          reason: "RFC 9112 §7.1, RFC 9110 §8.6: at most 15 hex / 18 decimal digits, so sizes never overflow"),
    E.new(kind: :spindle_stricter, error: /request body too large|too many header fields|chunk extension too long/,
          reason: "a configured limit (docs/PARSER.md): 413 / 431 / 400; llhttp has none"),

    # llhttp refuses what Spindle takes: a choice of llhttp's that RFC 9110/9112 do not make.
    E.new(kind: :oracle_stricter, error: /HPE_INVALID_METHOD/, bytes: UNKNOWN_METHOD,
          reason: "RFC 9110 §9.1: a method is any token; llhttp knows a fixed list, Spindle leaves it to the app"),
    E.new(kind: :oracle_stricter, error: /HPE_INVALID_CHUNK_SIZE|HPE_STRICT/, bytes: BLANKS_IN_CHUNK_EXT,
          reason: "RFC 9112 §7.1.1: chunk-ext allows BWS around ';' and '='; strict llhttp does not"),
    E.new(kind: :oracle_stricter, error: /HPE_INVALID_CONTENT_LENGTH/, bytes: LENGTH_IN_TRAILER,
          reason: "RFC 9110 §6.5.1: Content-Length in a trailer never frames; Spindle discards trailer " \
                  "fields, llhttp refuses them as if they were header fields"),
    E.new(kind: :oracle_stricter, error: /HPE_INVALID_TRANSFER_ENCODING/, bytes: EMPTY_AFTER_CHUNKED,
          reason: "RFC 9110 §5.6.1.2: a recipient MUST ignore empty list elements, so \"chunked ,\" ends in " \
                  "chunked; strict llhttp takes the empty element for a coding after chunked (it skips a " \
                  "leading one). No hop can frame such a request by a length instead: Spindle refuses " \
                  "Transfer-Encoding with Content-Length, and on HTTP/1.0"),
    E.new(kind: :oracle_stricter, bytes: HEAD_NOT_ENDED,
          reason: "not a verdict: Spindle checks a head once its blank line is in (bounded by max_head, " \
                  "docs/PARSER.md), llhttp at the first bad byte; Spindle has accepted nothing yet"),

    # Not a framing question.
    E.new(kind: :boundary, oracle_tail: :upgrade,
          reason: "RFC 9110 §7.8: after an upgrade request llhttp hands the bytes to the new protocol; " \
                  "Spindle frames them as HTTP until the app takes the connection over")
  ].freeze

  def setup
    skip "node is not installed: no llhttp oracle" unless Differential::Oracle.available?
  end

  def run_differential
    @run ||= Differential::Run.new(explanations: EXPLAINED)
  end

  def test_corpus_is_large_and_varied
    cases = run_differential.cases
    assert_operator cases.size, :>=, 1500
    assert_operator cases.count { |c| c.label == "test vector" }, :>=, 200
  end

  def test_every_disagreement_is_explained
    unexplained = run_differential.unexplained.map do |d|
      "#{d.kind} at message #{d.index}: #{d.bytes.inspect}\n  spindle: #{d.spindle.describe}\n" \
        "  llhttp:  #{d.oracle.describe}"
    end
    assert_empty unexplained, "#{run_differential.summary}\n#{unexplained.first(10).join("\n")}"
  end

  def test_framing_never_differs_when_both_accept
    framing = run_differential.disagreements.select { |d| d.kind == :framing }
    assert_empty framing.map(&:bytes), "both accepted a message but framed it differently"
  end
end
