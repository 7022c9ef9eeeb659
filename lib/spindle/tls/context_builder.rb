# frozen_string_literal: true

require "openssl"

module Spindle
  module TLS
    # Builds the OpenSSL::SSL::SSLContext for one ssl:// bind from its
    # Settings, reading the files each time (boot, and every reload). Every
    # failure is a Listener::Error that names the file and what is wrong with
    # it, so a bad bind stops the boot with one readable line.
    module ContextBuilder
      ALPN = "http/1.1"
      # TLS 1.2 only: forward-secret AEAD suites. TLS 1.3's are OpenSSL's
      # defaults (all of them are AEAD and forward secret).
      TLS12_CIPHERS = "ECDHE+AESGCM:ECDHE+CHACHA20:DHE+AESGCM:DHE+CHACHA20:!aNULL:!eNULL:!SHA1:!DSS"
      VERIFY = {
        "none" => OpenSSL::SSL::VERIFY_NONE,
        "peer" => OpenSSL::SSL::VERIFY_PEER,
        "force_peer" => OpenSSL::SSL::VERIFY_PEER | OpenSSL::SSL::VERIFY_FAIL_IF_NO_PEER_CERT,
      }.freeze
      # No renegotiation: a client could otherwise make a read want a write
      # mid-request, and make the server redo the costly part at will.
      OPTIONS = OpenSSL::SSL::OP_NO_COMPRESSION | OpenSSL::SSL::OP_CIPHER_SERVER_PREFERENCE |
                (defined?(OpenSSL::SSL::OP_NO_RENEGOTIATION) ? OpenSSL::SSL::OP_NO_RENEGOTIATION : 0)

      # The client offered ALPN protocols and HTTP/1.1 is not one of them (say
      # only h2): the handshake fails with no_application_protocol.
      class NoCommonProtocol < StandardError; end

      SELECT_ALPN = lambda do |offered|
        raise NoCommonProtocol, "client offered #{offered.join(', ')}" unless offered.include?(ALPN)

        ALPN
      end

      module_function

      # Raises Listener::Error.
      def build(settings, shown)
        certs = certificates(settings.cert, shown)
        key = private_key(settings.key, shown)
        unless certs.first.check_private_key(key)
          raise Listener::Error, "bind #{shown}: key #{settings.key} does not match the certificate in #{settings.cert}"
        end

        context(settings, certs, key, shown)
      end

      def context(settings, certs, key, shown)
        ctx = OpenSSL::SSL::SSLContext.new
        ctx.min_version = OpenSSL::SSL::TLS1_2_VERSION
        ctx.add_certificate(certs.first, key, certs.drop(1))
        ctx.ciphers = TLS12_CIPHERS
        ctx.options |= OPTIONS
        ctx.alpn_select_cb = SELECT_ALPN
        # Session resumption with client certificates needs an id context.
        ctx.session_id_context = "spindle"
        verify(ctx, settings, shown) if settings.verify?
        ctx.setup # frozen from here on: safe to share between threads
        ctx
      end

      def verify(ctx, settings, shown)
        cas = certificates(settings.ca, shown)
        store = OpenSSL::X509::Store.new
        cas.each { |ca| store.add_cert(ca) }
        ctx.cert_store = store
        ctx.client_ca = cas # the names a client is told to pick its certificate by
        ctx.verify_mode = VERIFY.fetch(settings.verify_mode)
      end

      def certificates(path, shown)
        certs = OpenSSL::X509::Certificate.load(read(path, shown))
        raise Listener::Error, "bind #{shown}: no PEM certificate in #{path}" if certs.empty?

        certs
      rescue OpenSSL::X509::CertificateError => e
        raise Listener::Error, "bind #{shown}: #{path} is not a PEM certificate (#{e.message})"
      end

      # The empty passphrase keeps OpenSSL from prompting on a terminal for an
      # encrypted key: it fails instead, with the message below.
      def private_key(path, shown)
        OpenSSL::PKey.read(read(path, shown), "")
      rescue OpenSSL::PKey::PKeyError, ArgumentError => e
        raise Listener::Error, "bind #{shown}: #{path} is not an unencrypted PEM private key (#{e.message})"
      end

      def read(path, shown)
        File.read(path)
      rescue SystemCallError, IOError => e
        raise Listener::Error, "bind #{shown}: cannot read #{path}: #{e.message.sub(/ @ .*/, '')}"
      end
    end
  end
end
