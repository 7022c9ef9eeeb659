# frozen_string_literal: true

# What a TLS test wants to know about the request it made: the scheme Rack
# was told, HTTPS, the client certificate's subject (SSL_CLIENT_CERT) and which
# process served it.
require "openssl"

tls = lambda do |env|
  pem = env["SSL_CLIENT_CERT"]
  client = pem ? OpenSSL::X509::Certificate.new(pem).subject.to_s : "none"
  body = "scheme=#{env['rack.url_scheme']} https=#{env['HTTPS']} client=#{client} pid=#{Process.pid}\n"
  [200, { "content-type" => "text/plain", "content-length" => body.bytesize.to_s }, [body]]
end

run Rack::Lint.new(tls)
