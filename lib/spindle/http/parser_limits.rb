# frozen_string_literal: true

module Spindle
  module HTTP
    # The limits the C parser takes (its configure reads each by name): the
    # one list, for Parser.new and for Config#parser_limits. Apart from
    # parser.rb so that loading the config (bin/docs, say) does not load the
    # C extension.
    class Parser
      LIMITS = %i[max_request_line max_field_name max_field_value max_head max_fields
                  max_chunk_ext max_chunk_ext_total max_trailer max_body].freeze
    end
  end
end
