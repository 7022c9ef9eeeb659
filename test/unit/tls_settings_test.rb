# frozen_string_literal: true

require "minitest/autorun"
require "spindle/listener"
require_relative "../support/tls_setup"

# An ssl:// bind that cannot work stops the boot with one line that says why.
class TlsSettingsTest < Minitest::Test
  include TlsFixture

  def test_opens_and_serves_the_pair
    listener = Spindle::Listener.open(@files.bind, backlog: 8).first
    assert listener.tls?
    assert_match(%r{\Assl://127\.0\.0\.1:\d+\z}, listener.uri)
    assert_match(/cert=#{Regexp.escape(URI.encode_www_form_component(@files.path("cert.pem")))}/, listener.handover)
  ensure
    listener&.close
  end

  def test_refuses_what_cannot_work
    {
      "ssl://127.0.0.1:0?key=#{@files.path('key.pem')}" => /cert=PATH is required/,
      @files.bind(cert: @files.path("missing.pem")) => /cannot read .*missing\.pem: No such file/,
      @files.bind(cert: @files.dir) => /cannot read .*: Is a directory/,
      @files.bind(cert: @files.ca_path) => /does not match the certificate/,
      @files.bind(cert: @files.path("key.pem")) => /no PEM certificate|not a PEM certificate/,
      @files.bind(key: @files.path("cert.pem")) => /not an unencrypted PEM private key/,
      @files.bind(verify_mode: "peer") => /needs ca=PATH/,
      @files.bind(ca: @files.ca_path) => /ca= is used only with verify_mode/,
      @files.bind(verify_mode: "sometimes", ca: @files.ca_path) => /verify_mode=sometimes/,
      @files.bind(proxy_protocol: "true") => /proxy_protocol is not supported on ssl:\/\/ binds/,
      @files.bind(ciphers: "ALL") => /unknown parameter ciphers=/,
    }.each do |bind, message|
      error = assert_raises(Spindle::Listener::Error, bind) { Spindle::Listener.open(bind, backlog: 8).each(&:close) }
      assert_match message, error.message
    end
  end

  def test_proxy_protocol_false_is_allowed
    Spindle::Listener.open(@files.bind(proxy_protocol: "false"), backlog: 8).each(&:close)
  end

  def test_an_encrypted_key_is_refused_without_a_prompt
    key = OpenSSL::PKey::EC.generate("prime256v1")
    @files.write("locked.pem", key.private_to_pem(OpenSSL::Cipher.new("aes-128-cbc"), "secret"))
    error = assert_raises(Spindle::Listener::Error) do
      Spindle::Listener.open(@files.bind(key: @files.path("locked.pem")), backlog: 8)
    end
    assert_match(/not an unencrypted PEM private key/, error.message)
  end
end
