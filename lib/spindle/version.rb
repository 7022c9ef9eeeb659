# frozen_string_literal: true

module Spindle
  VERSION = "0.1.0"
end
