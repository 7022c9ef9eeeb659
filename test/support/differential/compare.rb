# frozen_string_literal: true

require_relative "framing"

module Differential
  # Where Spindle's framing of a stream and the oracle's part ways, if they do.
  #   :framing          both completed a message but disagree on where it ends,
  #                     its body or whether the connection stays open
  #   :spindle_stricter Spindle refuses a message the oracle accepts (or waits on)
  #   :oracle_stricter  the oracle refuses a message Spindle accepts (or waits on)
  #   :boundary         one saw a complete message where the other waits for more,
  #                     or one stopped (close, upgrade) where the other went on
  Disagreement = Struct.new(:label, :bytes, :kind, :index, :spindle, :oracle) do
    # The bytes from the start of the first message the two disagree on.
    def message_bytes
      bytes.byteslice((index.zero? ? 0 : spindle.messages[index - 1].end)..)
    end
  end

  module Compare
    module_function

    def disagreement(label, bytes, spindle, oracle)
      agreed = spindle.messages.zip(oracle.messages).take_while { |s, o| s && o && s.framing == o.framing }.size
      kind = kind_at(agreed, spindle, oracle)
      kind && Disagreement.new(label, bytes, kind, agreed, spindle, oracle)
    end

    def kind_at(index, spindle, oracle)
      s = outcome(spindle, index)
      o = outcome(oracle, index)
      return nil if s == o && (s != :accepted || spindle.accepted == oracle.accepted)
      return :boundary if s == :upgrade || o == :upgrade
      return :framing if s == :accepted && o == :accepted
      return :spindle_stricter if s == :error
      return :oracle_stricter if o == :error

      :boundary
    end

    # What a parser made of message number index: :accepted, or its tail.
    def outcome(framing, index)
      framing.accepted > index ? :accepted : framing.tail
    end
  end
end
