# frozen_string_literal: true

require "test_helper"
require "tmpdir"
require "spindle/listener"

# Bind options (?proxy_protocol=true): which binds take them, what they
# refuse, and that a hot restart hands the option over with the socket.
class ListenerBindOptionsTest < Minitest::Test
  Listener = Spindle::Listener

  def teardown
    @listeners&.each(&:close)
  end

  def open(uri)
    listener = Listener.open(uri, backlog: 8).first
    (@listeners ||= []) << listener
    listener
  end

  def test_proxy_protocol_on_tcp_and_unix_binds
    assert_predicate open("tcp://127.0.0.1:0?proxy_protocol=true"), :proxy_protocol?
    refute_predicate open("tcp://127.0.0.1:0?proxy_protocol=false"), :proxy_protocol?
    refute_predicate open("tcp://127.0.0.1:0"), :proxy_protocol?
    unix = open("unix://#{Dir.mktmpdir('slb')}/s.sock?proxy_protocol=true")
    assert_predicate unix, :proxy_protocol?
    refute_includes unix.uri, "?", "the start-up line shows the address alone"
  end

  def test_bad_options_are_refused_before_binding
    {
      "tcp://127.0.0.1:0?proxy_protocol=yes" => /proxy_protocol must be true or false/,
      "tcp://127.0.0.1:0?proxy_protocl=true" => /unknown option "proxy_protocl"/,
      "ssl://127.0.0.1:0?proxy_protocol=true" => %r{proxy_protocol is not supported on ssl:// binds yet},
    }.each do |uri, message|
      error = assert_raises(Listener::Error, uri) { open(uri) }
      assert_match message, error.message
    end
  end

  # USR2 passes "fd=uri" across exec: the successor must expect the header too.
  def test_a_hot_restart_hands_the_option_over
    listener = open("tcp://127.0.0.1:0?proxy_protocol=true")
    copy = listener.io.dup
    copy.autoclose = false
    _, uri = listener.handover.split("=", 2)
    inherited = Listener.inherit("#{copy.fileno}=#{uri}")
    inherited.io.autoclose = false # the fd is copy's
    assert_predicate inherited, :proxy_protocol?
    assert_equal listener.uri, inherited.uri
    plain = Listener.inherit("#{copy.fileno}=#{listener.uri}")
    plain.io.autoclose = false
    refute_predicate plain, :proxy_protocol?
  ensure
    copy&.close
  end
end
