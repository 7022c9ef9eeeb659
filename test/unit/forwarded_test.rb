# frozen_string_literal: true

require "test_helper"
require "spindle/config"
require "spindle/http/forwarded"

# --trusted-proxies: which X-Forwarded-* values are believed, and from whom.
class ForwardedTest < Minitest::Test
  Forwarded = Spindle::HTTP::Forwarded

  def forwarded = Forwarded.new(Forwarded.parse_networks(%w[127.0.0.1/32 10.0.0.0/8 ::1 fd00::/8]))

  def apply(peer, fields)
    env = { "REMOTE_ADDR" => peer, "rack.url_scheme" => "http", "HTTP_HOST" => "backend:9292",
            "SERVER_NAME" => "backend", "SERVER_PORT" => "9292" }
    fields.each { |name, value| env["HTTP_X_FORWARDED_#{name.upcase}"] = value }
    forwarded.apply(env)
    env
  end

  # The answer QueueShedding reads (as spindle.proxied): was the peer trusted?
  def test_apply_says_whether_the_peer_was_a_trusted_proxy
    assert_equal true, forwarded.apply({ "REMOTE_ADDR" => "10.1.2.3" }), "trusted, even with no X-Forwarded-* field"
    assert_equal false, forwarded.apply({ "REMOTE_ADDR" => "198.51.100.7", "HTTP_X_FORWARDED_FOR" => "10.0.0.1" })
    assert_equal false, forwarded.apply({}), "no peer address: not trusted"
  end

  # Verdicts are remembered per peer (Forwarded::VERDICTS of them): still
  # right once more peers than that have asked, and for a String its
  # caller changed after asking (the memory keeps its own copy).
  def test_remembered_verdicts_stay_right
    f = forwarded
    peers = Array.new(Forwarded::VERDICTS + 10) { |i| i.even? ? "10.0.#{i / 256}.#{i % 256}" : "192.0.2.#{i % 256}" }
    2.times { peers.each_with_index { |peer, i| assert_equal i.even?, f.trusted?(peer), peer } }
    address = +"10.9.9.9"
    assert f.trusted?(address)
    address.replace("192.0.2.1")
    refute f.trusted?(address), "asked again after the caller changed its String"
    assert f.trusted?("10.9.9.9")
  end

  def test_the_right_most_untrusted_address_is_the_client
    assert_equal "198.51.100.7", apply("127.0.0.1", for: "203.0.113.9, 198.51.100.7")["REMOTE_ADDR"]
    assert_equal "198.51.100.7", apply("10.1.2.3", for: "6.6.6.6, 198.51.100.7, 10.0.0.5, 127.0.0.1")["REMOTE_ADDR"]
    assert_equal "2001:db8::7", apply("::1", for: "2001:db8::7, fd00::1")["REMOTE_ADDR"]
  end

  # A client that writes its own X-Forwarded-For gets it prepended to, never believed.
  def test_a_spoofed_left_entry_is_not_believed
    assert_equal "198.51.100.7", apply("127.0.0.1", for: "127.0.0.1, 198.51.100.7")["REMOTE_ADDR"]
  end

  def test_all_trusted_means_the_left_most
    assert_equal "10.0.0.9", apply("127.0.0.1", for: "10.0.0.9, 10.0.0.5")["REMOTE_ADDR"]
  end

  def test_ports_and_mapped_addresses_in_the_list
    assert_equal "2001:db8::1", apply("::1", for: "[2001:db8::1]:443")["REMOTE_ADDR"]
    assert_equal "192.0.2.1", apply("::1", for: "192.0.2.1:5555")["REMOTE_ADDR"]
    # ::ffff:10.0.0.2 is 10.0.0.2: trusted, skipped.
    assert_equal "192.0.2.1", apply("::1", for: "192.0.2.1, ::ffff:10.0.0.2")["REMOTE_ADDR"]
  end

  def test_an_untrusted_peer_changes_nothing
    env = apply("192.0.2.50", for: "1.2.3.4", proto: "https", host: "evil.example")
    assert_equal ["192.0.2.50", "http", "backend:9292", "backend", "9292"],
                 env.values_at("REMOTE_ADDR", "rack.url_scheme", "HTTP_HOST", "SERVER_NAME", "SERVER_PORT")
    assert_equal "1.2.3.4", env["HTTP_X_FORWARDED_FOR"], "the field itself reaches the app untouched"
  end

  def test_proto_and_host
    env = apply("127.0.0.1", proto: "HTTPS", host: "shop.example")
    assert_equal ["https", "shop.example", "shop.example", "443"],
                 env.values_at("rack.url_scheme", "HTTP_HOST", "SERVER_NAME", "SERVER_PORT")
    env = apply("127.0.0.1", proto: "http", host: "shop.example:8080")
    assert_equal ["http", "shop.example:8080", "shop.example", "8080"],
                 env.values_at("rack.url_scheme", "HTTP_HOST", "SERVER_NAME", "SERVER_PORT")
    env = apply("127.0.0.1", host: "[2001:db8::5]:8443")
    assert_equal ["[2001:db8::5]", "8443"], env.values_at("SERVER_NAME", "SERVER_PORT")
    # An appending proxy puts its own value last: that one counts.
    assert_equal "http", apply("127.0.0.1", proto: "https, http")["rack.url_scheme"]
  end

  MALFORMED_FOR = ["", " ", ",", "1.2.3.4,,", "unknown", "1.2.3", "256.1.1.1", "1.2.3.4/8", "fe80::1%eth0",
                   "[::1", "1.2.3.4:99999x", "01.2.3.4", "\x00", "1.2.3.4\x00", ("1.1.1.1," * 40)].freeze
  MALFORMED_PROTO = ["", "ftp", "https://", "HTTPS ; x", "\xff"].freeze
  MALFORMED_HOST = ["", "a b", "a:b", "a:0", "a:70000", "[zz]", "host/path", "a@b", "x" * 300, "\r\nx"].freeze

  def test_malformed_values_are_ignored_and_never_raise
    MALFORMED_FOR.each do |value|
      assert_equal "127.0.0.1", apply("127.0.0.1", for: value.b)["REMOTE_ADDR"], value.inspect
    end
    MALFORMED_PROTO.each { |value| assert_equal "http", apply("127.0.0.1", proto: value.b)["rack.url_scheme"], value.inspect }
    MALFORMED_HOST.each do |value|
      env = apply("127.0.0.1", host: value.b)
      assert_equal %w[backend:9292 backend 9292], env.values_at("HTTP_HOST", "SERVER_NAME", "SERVER_PORT"), value.inspect
    end
  end

  def test_a_peer_that_is_no_address_is_not_trusted
    ["", "0.0.0.0/0", "garbage", nil].each do |peer|
      env = apply(peer, for: "1.2.3.4")
      peer ? assert_equal(peer, env["REMOTE_ADDR"]) : assert_nil(env["REMOTE_ADDR"])
    end
  end

  def test_the_option_refuses_what_is_no_network
    assert_equal 2, Spindle::Config::Coerce.networks("127.0.0.1, 10.0.0.0/8", "trusted_proxies").size
    ["", "10.0.0.0/33", "localhost", "1.2.3.4,nope"].each do |bad|
      assert_raises(Spindle::Config::Error, bad) { Spindle::Config::Coerce.networks(bad, "trusted_proxies") }
    end
  end
end
