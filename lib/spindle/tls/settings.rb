# frozen_string_literal: true

require "uri"

module Spindle
  module TLS
    # What an ssl:// bind's query asks for, checked before any file is read:
    # ssl://HOST:PORT?cert=PATH&key=PATH[&ca=PATH][&verify_mode=none|peer|force_peer]
    # (Puma's form). Paths are made absolute here, so a hot restart, which
    # reopens the files from the handed-over URI, reads the same ones.
    class Settings
      VERIFY_MODES = %w[none peer force_peer].freeze
      KNOWN = %w[cert key ca verify_mode proxy_protocol].freeze

      attr_reader :cert, :key, :ca, :verify_mode

      # query: the bind's query string; shown: the bind as written, for messages.
      # Raises Listener::Error naming what is wrong.
      def self.parse(query, shown)
        params = URI.decode_www_form(query.to_s)
        names = params.map(&:first)
        refuse_unknown(names, shown)
        duplicate = names.find { |name| names.count(name) > 1 }
        raise Listener::Error, "bind #{shown}: #{duplicate}= is given twice" if duplicate

        refuse_proxy_protocol(params.to_h["proxy_protocol"], shown)
        new(params.to_h, shown)
      rescue ArgumentError => e
        raise Listener::Error, "bind #{shown}: unreadable query (#{e.message})"
      end

      # The PROXY protocol header would arrive before the TLS handshake, and
      # the read path that strips it does not run under TLS yet: refused at
      # boot rather than half-supported (proxy_protocol=false is allowed).
      def self.refuse_proxy_protocol(value, shown)
        return if value.nil? || value == "false"

        raise Listener::Error, "bind #{shown}: proxy_protocol is not supported on ssl:// binds yet " \
                               "(terminate TLS in the proxy, or use a tcp:// bind)"
      end

      def self.refuse_unknown(names, shown)
        unknown = names - KNOWN
        return if unknown.empty?

        raise Listener::Error, "bind #{shown}: unknown parameter #{unknown.first}= (known: #{KNOWN.join(', ')})"
      end

      def initialize(params, shown)
        @cert = path(params, "cert", shown)
        @key = path(params, "key", shown)
        @ca = params["ca"] && File.expand_path(params["ca"])
        @verify_mode = params.fetch("verify_mode", "none")
        check_verify(shown)
      end

      def verify? = @verify_mode != "none"

      # The query again, with absolute paths: what a hot restart reopens.
      def query
        URI.encode_www_form({ "cert" => @cert, "key" => @key, "ca" => @ca,
                              "verify_mode" => (@verify_mode if verify?) }.compact)
      end

      private

      def path(params, name, shown)
        value = params[name]
        raise Listener::Error, "bind #{shown}: #{name}=PATH is required on ssl:// binds" if value.to_s.empty?

        File.expand_path(value)
      end

      # A CA with no verification, or verification with no CA, is a mistake
      # that would otherwise pass silently.
      def check_verify(shown)
        unless VERIFY_MODES.include?(@verify_mode)
          raise Listener::Error, "bind #{shown}: verify_mode=#{@verify_mode} (use #{VERIFY_MODES.join(', ')})"
        end
        if verify? && !@ca
          raise Listener::Error, "bind #{shown}: verify_mode=#{@verify_mode} needs ca=PATH to check client certificates against"
        end
        return unless @ca && !verify?

        raise Listener::Error, "bind #{shown}: ca= is used only with verify_mode=peer or force_peer"
      end
    end
  end
end
