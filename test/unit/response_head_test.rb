# frozen_string_literal: true

require "test_helper"
require "stringio"
require "spindle/log"
require "spindle/http/response_writer"

# ResponseHead (C) writes the common response; everything else it hands back
# to the Ruby writer, whose rules are the contract. Generated responses,
# good and bad, each written twice by the same writer: once as it runs, once
# with ResponseHead handing everything back. The bytes, the outcome, the
# body size, the error raised and the log must be the same.
class ResponseHeadTest < Minitest::Test
  SEED = Integer(ENV.fetch("RESPONSE_HEAD_SEED", 20_261_124))
  CASES = 3_000
  SERVER_DATE = /^date: \w{3}, \d\d \w{3} \d{4} \d\d:\d\d:\d\d GMT\r\n/

  # Where the writer's bytes go: it only calls #write for in-memory bodies.
  class Recorder
    attr_reader :bytes

    def initialize = @bytes = +"".b
    def write(data, _held = false) = @bytes << data.b
  end

  # The body of a framework: parts through to_ary, as Rails' are.
  class ToAryBody
    def initialize(parts) = @parts = parts
    def to_ary = @parts
    def each(&block) = @parts.each(&block)
  end

  # Hands every response back when on, as it does for what it cannot judge;
  # counts what it rendered when off.
  module HandBack
    class << self
      attr_accessor :on, :rendered
    end
    self.rendered = 0

    def render(*args)
      return if HandBack.on

      super.tap { |sent| HandBack.rendered += 1 if sent }
    end
  end
  Spindle::HTTP::ResponseHead.singleton_class.prepend(HandBack)

  PLAIN_NAMES = ["content-type", "Content-Type", "x-request-id", "set-cookie", "etag", "vary", "upgrade",
                 "date", "Date", "content-length", "Content-Length"].freeze
  SPECIAL_NAMES = ["connection", "Connection", "transfer-encoding", "rack.session", "bad name", "", "x\u00e9",
                   "x:y", "x\xff", :symbol].freeze
  VALUE_CHARS = ["a", "Z", "0", " ", ";", "=", "\u00e9", "\r", "\n", "\0", "\t", "\xff"].freeze
  STATUSES = [200, 200, 200, 201, 204, 205, 301, 304, 404, 500, 503, 101].freeze

  def setup
    @rng = Random.new(SEED)
    @log_err = StringIO.new
    @writer = Spindle::HTTP::ResponseWriter.new(Spindle::Log.new(out: StringIO.new, err: @log_err, quiet: true),
                                                count_bytes: true)
  end

  def teardown = HandBack.on = false

  def test_both_paths_write_the_same_bytes
    rendered = 0
    CASES.times do |i|
      response = generate
      fast = write(response, hand_back: false)
      slow = write(response, hand_back: true)
      rendered += 1 if fast.delete(:rendered)
      slow.delete(:rendered)
      assert_equal slow, fast, "case #{i}: #{response.inspect}"
    end
    # Both paths ran often enough for the comparison to mean something.
    assert_operator rendered, :>, CASES / 5
    assert_operator rendered, :<, CASES * 4 / 5
  end

  def test_a_plain_response_is_rendered_in_c
    result = write([200, { "content-type" => "text/plain" }, ["Hello World"], "GET", "HTTP/1.1", true],
                   hand_back: false)
    assert result[:rendered]
    assert_equal "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ndate: (the server's)\r\ncontent-length: 11\r\n" \
                 "\r\nHello World".b, result[:bytes]
  end

  def test_to_ary_is_called_once_when_handed_back
    calls = 0
    body = Object.new
    body.define_singleton_method(:to_ary) { (calls += 1) && ["ab"] }
    result = write([200, { "connection" => "close" }, body, "GET", "HTTP/1.1", true], hand_back: false)
    assert_equal 1, calls
    refute result[:rendered]
    assert_match(/connection: close\r\n\r\nab\z/, result[:bytes])
  end

  private

  # [status, headers, body, method, protocol, keep_alive]
  def generate
    parts = Array.new(@rng.rand(0..3)) { part }
    headers = Array.new(@rng.rand(0..4)).to_h { [field_name, value(parts)] }
    body = @rng.rand(8).zero? ? ToAryBody.new(parts) : parts
    [pick(STATUSES), headers, body, pick(%w[GET GET GET HEAD]), pick(%w[HTTP/1.1 HTTP/1.1 HTTP/1.0]),
     @rng.rand(4).positive?]
  end

  def part
    case @rng.rand(20)
    when 0 then :not_a_string
    when 1 then "x" * 70_000 # over the coalescing limit
    when 2 then "\xff\xfe".b
    else "p" * @rng.rand(0..40)
    end
  end

  def field_name = @rng.rand(10).zero? ? pick(SPECIAL_NAMES) : pick(PLAIN_NAMES)

  def value(parts)
    case @rng.rand(12)
    when 0 then parts.sum { |p| p.is_a?(String) ? p.bytesize : 0 }.to_s # a right length, if named one
    when 1 then "12345678901234567890"
    when 2 then Array.new(@rng.rand(0..2)) { text }
    when 3 then 42
    else text
    end
  end

  def text
    chars = Array.new(@rng.rand(0..8)) { @rng.rand(20).zero? ? pick(VALUE_CHARS) : pick(VALUE_CHARS.first(6)) }
    chars.join
  end

  def pick(list) = list[@rng.rand(list.size)]

  def write(response, hand_back:)
    status, headers, body, method, protocol, keep_alive = response
    HandBack.on = hand_back
    env = { "REQUEST_METHOD" => method, "SERVER_PROTOCOL" => protocol, "PATH_INFO" => "/" }
    conn = Recorder.new
    @log_err.truncate(0)
    @log_err.rewind
    before = HandBack.rendered
    outcome = begin
      @writer.write(conn, env, status, deep_dup(headers), copy(body), keep_alive)
    rescue StandardError => e
      [e.class, e.message]
    end
    { outcome: outcome, bytes: conn.bytes.gsub(SERVER_DATE, "date: (the server's)\r\n"), sent: env["spindle.body_bytes"],
      log: @log_err.string, rendered: HandBack.rendered > before }
  ensure
    HandBack.on = false
  end

  # A fresh copy per write: the writer must not be able to change what the
  # other path sees.
  def copy(body)
    case body
    when Array then body.dup
    when ToAryBody then ToAryBody.new(body.to_ary.dup)
    else body
    end
  end
  def deep_dup(headers) = headers.transform_values { |v| v.is_a?(Array) ? v.dup : v }

end
