# frozen_string_literal: true

require "ipaddr"

module Spindle
  module HTTP
    # The PROXY protocol header (HAProxy's spec, versions 1 and 2) that a load
    # balancer sends first on each connection of a bind with
    # ?proxy_protocol=true: who the client really is. Parsed from the
    # connection's read buffer before the HTTP parser sees a byte, so every
    # engine gets it the same way (Connection#advance).
    #
    # .parse is called again with more bytes until the header is whole; it
    # never consumes a partial header. Whatever is not a well-formed header
    # of either version raises Error, and the connection is closed without a
    # response: a peer that does not speak the protocol is not the load
    # balancer, and an HTTP answer would only tell it more.
    module ProxyHeader
      class Error < StandardError; end

      # remote_addr nil: keep the connection's own peer (v1 UNKNOWN, v2
      # LOCAL, an unspecified or unix address family).
      Result = Struct.new(:remote_addr, :remote_port)
      KEEP_PEER = Result.new(nil, nil).freeze

      V1_PREFIX = "PROXY ".b.freeze
      V1_MAX = 107 # the spec's longest line, CRLF included
      V2_SIGNATURE = "\r\n\r\n\x00\r\nQUIT\n".b.freeze
      V2_FIXED = 16 # signature, version and command, family, length
      # Address block and TLVs. The spec's addresses take at most 216 bytes
      # (unix); TLVs (TLS details, a unique id, cloud endpoint ids) stay far
      # below this. A larger length is refused before its bytes are awaited.
      V2_MAX_PAYLOAD = 2048
      PORT = /\A(?:0|[1-9]\d{0,4})\z/
      IPV4 = /\A(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\z/
      IPV6_CHARS = /\A[0-9A-Fa-f:.]{2,45}\z/

      module_function

      # Parses a header at bytes[offset..]: [Result, offset after it] once
      # it is whole, nil while it is a valid beginning; raises Error.
      def parse(bytes, offset)
        available = bytes.bytesize - offset
        return nil if available <= 0

        case bytes.getbyte(offset)
        when 0x50 then v1(bytes, offset, available) # "P"
        when 0x0D then v2(bytes, offset, available) # "\r"
        else raise Error, "not a PROXY protocol header"
        end
      end

      # --- version 1: "PROXY TCP4 192.0.2.1 198.51.100.2 56324 443\r\n" ---

      def v1(bytes, offset, available)
        line = bytes.byteslice(offset, [available, V1_MAX].min)
        check_signature(line, V1_PREFIX)
        ending = line.index("\r\n")
        return v1_unfinished(line) unless ending

        text = line.byteslice(0, ending)
        raise Error, "PROXY v1 line has a bare CR or LF" if text.match?(/[\r\n]/)

        [v1_fields(text), offset + ending + 2]
      end

      def v1_unfinished(line)
        raise Error, "PROXY v1 line longer than #{V1_MAX} bytes" if line.bytesize >= V1_MAX
        raise Error, "PROXY v1 line has a bare CR or LF" if line.chomp("\r").match?(/[\r\n]/)

        nil
      end

      def v1_fields(text)
        _proxy, family, *rest = text.split(/ /, -1) # single spaces: " " would also split on runs of them
        return KEEP_PEER if family == "UNKNOWN" # the spec: ignore the rest of the line
        raise Error, "PROXY v1 family #{family.to_s[0, 8].inspect} unknown" unless %w[TCP4 TCP6].include?(family)
        raise Error, "PROXY v1 line has #{rest.size} fields after the family, not 4" unless rest.size == 4

        source, _destination = rest.first(2).map { |address| v1_address(address, family) }
        ports = rest.last(2)
        raise Error, "PROXY v1 port out of range" unless ports.all? { |port| PORT.match?(port) && port.to_i <= 65_535 }

        Result.new(source, ports.first)
      end

      def v1_address(text, family)
        if family == "TCP4"
          return text if IPV4.match?(text)
        elsif IPV6_CHARS.match?(text)
          ip = IPAddr.new(text) rescue nil # rubocop:disable Style/RescueModifier -- any failure is a refusal
          return ip.to_s if ip&.ipv6?
        end
        raise Error, "PROXY v1 #{family} address malformed"
      end

      # --- version 2: binary, after a 12-byte signature ---

      def v2(bytes, offset, available)
        head = bytes.byteslice(offset, [available, V2_FIXED].min)
        check_signature(head, V2_SIGNATURE)
        return nil if head.bytesize < V2_FIXED

        version_command, family_protocol, length = head.unpack("@12CCn")
        raise Error, "PROXY v2 version #{version_command >> 4} unknown" unless version_command >> 4 == 2
        raise Error, "PROXY v2 length #{length} over #{V2_MAX_PAYLOAD}" if length > V2_MAX_PAYLOAD
        return nil if available < V2_FIXED + length

        payload = bytes.byteslice(offset + V2_FIXED, length)
        [v2_result(version_command & 0x0F, family_protocol, payload), offset + V2_FIXED + length]
      end

      # The address block is at the front of the payload; the TLVs after it
      # are skipped whole (their content is not needed here).
      def v2_result(command, family_protocol, payload)
        return KEEP_PEER if command.zero? # LOCAL: a health check of the balancer's own
        raise Error, "PROXY v2 command #{command} unknown" unless command == 1

        family = family_protocol >> 4
        protocol = family_protocol & 0x0F
        raise Error, "PROXY v2 family #{family} unknown" if family > 3
        raise Error, "PROXY v2 protocol #{protocol} is not a stream" if protocol > 1
        return KEEP_PEER if family.zero? || family == 3 || protocol.zero? # unspecified, or a unix peer

        v2_inet(family, payload)
      end

      def v2_inet(family, payload)
        size = family == 1 ? 4 : 16
        raise Error, "PROXY v2 address block truncated" if payload.bytesize < (2 * size) + 4

        address = IPAddr.new_ntoh(payload.byteslice(0, size)).to_s
        port = payload.byteslice(2 * size, 2).unpack1("n")
        Result.new(address, port.to_s)
      end

      # What has arrived must be the beginning of the signature.
      def check_signature(got, signature)
        size = [got.bytesize, signature.bytesize].min
        return if got.byteslice(0, size) == signature.byteslice(0, size)

        raise Error, "not a PROXY protocol header"
      end
    end
  end
end
