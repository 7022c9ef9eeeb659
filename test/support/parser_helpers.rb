# frozen_string_literal: true

require "spindle/http/parser"

# Drives Spindle::HTTP::Parser the way docs/PARSER.md tells a caller to, and
# compares what comes out when the same bytes arrive whole, in two pieces or
# one byte at a time. The contract promises the same verdict, env and body in
# every case; request smuggling lives in the cases where that is not true.
module ParserHelpers
  # What one parse produced. verdict is :ok (message complete), :incomplete
  # (all input consumed, message not complete) or the class of the error raised.
  Result = Struct.new(:verdict, :status, :message, :env, :body, :consumed,
                      :keep_alive, :chunked, :content_length, :expect_continue,
                      keyword_init: true) do
    # The fields that must not depend on how the bytes were cut.
    def comparable
      to_h.except(:message)
    end
  end

  # Raised when execute returns without consuming anything and without having
  # finished: a caller following the contract would spin forever.
  class Stalled < StandardError; end

  ERROR_CLASSES = {
    400 => :BadRequest, 413 => :PayloadTooLarge, 414 => :URITooLong,
    417 => :ExpectationFailed, 431 => :HeaderFieldsTooLarge,
    501 => :NotImplemented, 505 => :VersionNotSupported
  }.freeze

  def parse_whole(bytes, **limits)
    drive([bytes], limits)
  end

  def parse_split(bytes, at:, **limits)
    drive([bytes.byteslice(0, at), bytes.byteslice(at..)], limits)
  end

  def parse_bytewise(bytes, **limits)
    drive(bytes.each_byte.map(&:chr), limits)
  end

  # Parses bytes whole, bytewise and split at every offset, asserts that all
  # of them agree, and returns the whole-parse result.
  def assert_same_everywhere(bytes, **limits)
    bytes = bytes.b
    whole = parse_whole(bytes, **limits)
    assert_agrees(whole, parse_bytewise(bytes, **limits), "fed bytewise", bytes)
    (0..bytes.bytesize).each do |at|
      assert_agrees(whole, parse_split(bytes, at: at, **limits), "split at #{at}", bytes)
    end
    whole
  end

  # Asserts that bytes are refused with status (and its error class) however
  # they are cut.
  def assert_refused(bytes, status, **limits)
    result = assert_same_everywhere(bytes, **limits)
    expected = [error_class(status), status]
    assert_equal expected, [result.verdict, result.status],
                 "#{bytes.inspect} should be refused with #{status}, got #{describe(result)}"
    result
  end

  def assert_accepted(bytes, **limits)
    result = assert_same_everywhere(bytes, **limits)
    assert_equal :ok, result.verdict, "#{bytes.inspect} should parse, got #{describe(result)}"
    result
  end

  def error_class(status)
    Spindle::HTTP.const_get(ERROR_CLASSES.fetch(status))
  end

  private

  # The caller's loop from docs/PARSER.md: execute stops after the head and
  # after the message, so keep calling it until a piece is used up or the
  # message is done. Each piece is overwritten once fed, because the contract
  # says consumed bytes are the parser's to copy; the sink is drained after
  # every call, because the contract says the caller may clear it.
  def drive(pieces, limits)
    parser = Spindle::HTTP::Parser.new(**limits)
    sink = String.new
    body = String.new
    consumed = 0
    pieces.each do |piece|
      piece = piece.b
      consumed += feed(parser, piece, sink, body)
      piece.bytesize.times { |i| piece.setbyte(i, 0x7e) }
      break if parser.done?
    end
    finish(parser, body, consumed)
  rescue Spindle::HTTP::ParseError, StandardError => e # anything else is a parser bug: show it
    Result.new(verdict: e.class, status: e.respond_to?(:status) ? e.status : nil,
               message: e.message)
  end

  def feed(parser, piece, sink, body)
    offset = 0
    while offset < piece.bytesize && !parser.done?
      after = parser.execute(piece, offset, sink)
      body << sink
      sink.clear
      raise Stalled, "execute(#{offset}) returned #{after.inspect}" unless after.is_a?(Integer) &&
                                                                           after > offset && after <= piece.bytesize

      offset = after
    end
    offset
  end

  def finish(parser, body, consumed)
    head = parser.head_complete?
    Result.new(verdict: parser.done? ? :ok : :incomplete, body: body, consumed: consumed,
               env: head ? parser.env.to_h { |k, v| [k, v.dup] } : nil,
               keep_alive: head ? parser.keep_alive? : nil,
               chunked: head ? parser.chunked? : nil,
               content_length: head ? parser.content_length : nil,
               expect_continue: head ? parser.expect_continue? : nil)
  end

  def assert_agrees(whole, other, how, bytes)
    return if whole.comparable == other.comparable

    flunk "#{bytes.inspect} #{how} differs from whole:\n  whole: #{describe(whole)}\n  #{how}: #{describe(other)}"
  end

  def describe(result)
    result.to_h.compact.map { |k, v| "#{k}=#{v.inspect}" }.join(" ")
  end

  # Builds request bytes: a line, field lines, the blank line, then a body.
  module Wire
    module_function

    def request(line, *fields, body: "")
      ([line, *fields, "", ""].map(&:b).join("\r\n".b) + body.b)
    end

    def get(*fields)
      request("GET / HTTP/1.1", "Host: example.com", *fields)
    end

    def post(*fields, body: "")
      request("POST / HTTP/1.1", "Host: example.com", *fields, body: body)
    end

    def chunked(wire_body, *fields)
      post("Transfer-Encoding: chunked", *fields, body: wire_body)
    end
  end
end
