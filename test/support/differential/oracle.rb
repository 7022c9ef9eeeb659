# frozen_string_literal: true

require "json"
require "open3"
require_relative "framing"

module Differential
  # llhttp as Node ships it, strict (llhttp_oracle.js), run once over a whole
  # corpus. Returns one Framing per stream, in order.
  module Oracle
    SCRIPT = File.join(__dir__, "llhttp_oracle.js")

    module_function

    def available?
      system("node", "-e", "require('_http_common').HTTPParser", out: File::NULL, err: File::NULL)
    end

    def version
      @version ||= `node -p process.versions.llhttp`.strip
    end

    # The methods llhttp knows; it refuses every other token.
    def methods
      @methods ||= `node -p "require('http').METHODS.join(' ')"`.split.freeze
    end

    def frame_all(streams)
      input = streams.map { |s| [s].pack("m0") }.join("\n") << "\n"
      out, err, status = Open3.capture3("node", SCRIPT, stdin_data: input)
      raise "llhttp oracle failed: #{err}" unless status.success?

      out.lines.map { |line| framing(JSON.parse(line)) }
    end

    def framing(json)
      messages = json["messages"].map do |m|
        Framing::Message.new(m["end"], m["body"].unpack1("m0"), m["keepAlive"], "#{m['method']} #{m['url']}")
      end
      Framing.new(messages, json["tail"].to_sym, json["error"])
    end
  end
end
