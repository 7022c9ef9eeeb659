# frozen_string_literal: true

require "ipaddr"

module Spindle
  module HTTP
    # --trusted-proxies: the X-Forwarded-* fields of a request are believed
    # only when the peer that sent it (REMOTE_ADDR, which a PROXY protocol
    # header may already have set) is in one of the trusted networks. Then:
    #
    # - X-Forwarded-For sets REMOTE_ADDR to the right-most address that is
    #   not itself a trusted proxy. Each proxy appends the address it got the
    #   request from, so only the entries right of the first untrusted one
    #   were written by proxies we trust; everything further left is the
    #   client's to invent. (Left-most would let any client pick its address.)
    # - X-Forwarded-Proto (http or https) sets rack.url_scheme.
    # - X-Forwarded-Host sets HTTP_HOST, SERVER_NAME and SERVER_PORT together.
    #
    # From any other peer the fields reach the app as they came and nothing
    # here reads them. A value that does not parse is ignored as a whole
    # (the env keeps what the connection said); nothing here raises on input.
    # docs/SECURITY.md states the rule for operators.
    class Forwarded
      FOR = "HTTP_X_FORWARDED_FOR"
      PROTO = "HTTP_X_FORWARDED_PROTO"
      HOST = "HTTP_X_FORWARDED_HOST"
      REMOTE_ADDR = "REMOTE_ADDR"
      SCHEMES = { "http" => "80", "https" => "443" }.freeze
      # A reg-name or IPv4 address, or a bracketed IPv6 literal; an optional port.
      HOST_VALUE = /\A(?<name>[A-Za-z0-9.\-]{1,253}|\[[0-9A-Fa-f:.]{2,45}\])(?::(?<port>\d{1,5}))?\z/
      # Entries of X-Forwarded-For may carry a port ("1.2.3.4:80", "[::1]:80").
      BRACKETED = /\A\[([^\]]+)\](?::\d{1,5})?\z/
      V4_WITH_PORT = /\A(\d{1,3}(?:\.\d{1,3}){3}):\d{1,5}\z/
      ADDRESS_CHARS = /\A[0-9A-Fa-f:.]{2,45}\z/
      LEADING_OWS = /\A[ \t]+/
      TRAILING_OWS = /[ \t]+\z/
      MAX_HOPS = 32 # a longer list is someone's attack, not a proxy chain
      # Peers whose verdict is remembered. A request from a trusted proxy
      # asks twice (its queue-time stamp, then these fields), and an
      # IPAddr parse costs ~6 us each: a quarter of a hello-world request.
      # Proxies are few; a server reached directly by many clients clears
      # the memory when it is full, and is no slower than without it.
      VERDICTS = 256

      # Raises ArgumentError for a list it cannot use (Config's check).
      def self.parse_networks(list)
        list.map do |cidr|
          IPAddr.new(cidr.strip)
        rescue IPAddr::Error
          raise ArgumentError, "not an IP address or CIDR network: #{cidr.inspect}"
        end
      end

      # networks: IPAddr networks (see .parse_networks).
      def initialize(networks)
        @networks = networks.dup.freeze
        @verdicts = {} # peer address String => true/false; safe to share: MRI's Hash calls hold the GVL
      end

      # Rewrites env from the X-Forwarded-* fields, if its peer is trusted.
      # True when it was (the request came through a trusted proxy), else
      # false.
      def apply(env)
        return false unless trusted?(env[REMOTE_ADDR])

        client = client_address(env[FOR])
        env[REMOTE_ADDR] = client if client
        scheme = scheme(env[PROTO])
        env["rack.url_scheme"] = scheme if scheme
        host(env, env[HOST])
        true
      end

      # Whether address (a String) is in a trusted network; false when it is
      # not an address at all.
      def trusted?(address)
        return false unless address

        verdict = @verdicts[address]
        return verdict unless verdict.nil?

        @verdicts.clear if @verdicts.size >= VERDICTS
        @verdicts[address] = judge(address)
      end

      private

      def judge(address)
        ip = ip(address)
        ip ? @networks.any? { |net| net.include?(ip) } : false
      end

      # The right-most untrusted entry; the left-most if all are trusted
      # (the request came from inside); nil for an empty or malformed list.
      def client_address(value)
        return nil unless value

        entries = value.split(",", MAX_HOPS + 1)
        return nil if entries.size > MAX_HOPS

        addresses = entries.map { |entry| ip(strip_port(trim(entry))) }
        return nil if addresses.empty? || addresses.include?(nil)

        chosen = addresses.reverse_each.find { |ip| @networks.none? { |net| net.include?(ip) } } || addresses.first
        chosen.to_s
      end

      # The right-most value: the one our trusted peer wrote (one that sets
      # the field has only one; one that appends puts its own last).
      def scheme(value)
        return nil unless value

        name = trim(value.split(",").last.to_s).downcase
        SCHEMES.key?(name) ? name : nil
      end

      def host(env, value)
        return unless value

        match = HOST_VALUE.match(trim(value.split(",").last.to_s))
        return unless match
        return if match[:port] && !(1..65_535).cover?(match[:port].to_i)

        env["HTTP_HOST"] = match[0]
        env["SERVER_NAME"] = match[:name]
        env["SERVER_PORT"] = match[:port] || SCHEMES.fetch(env["rack.url_scheme"], "80")
      end

      # Optional whitespace (RFC 9110: SP and HTAB) only: String#strip also
      # takes NUL, and would turn "1.2.3.4\0" into an address.
      def trim(text) = text.sub(LEADING_OWS, "").sub(TRAILING_OWS, "")

      def strip_port(entry)
        if (m = BRACKETED.match(entry)) then m[1]
        elsif (m = V4_WITH_PORT.match(entry)) then m[1]
        else entry
        end
      end

      # nil unless text is a plain address: no networks ("10.0.0.0/8"), zone
      # ids or trailing bytes (IPAddr alone took "1.2.3.4\0" for 1.2.3.4).
      def ip(text)
        return nil unless ADDRESS_CHARS.match?(text)

        IPAddr.new(text).native # ::ffff:10.0.0.1 is 10.0.0.1 to an IPv4 network
      rescue IPAddr::Error, ArgumentError
        nil
      end
    end
  end
end
