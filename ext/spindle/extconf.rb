# frozen_string_literal: true

require "mkmf"

# Warnings on, and strict: the parser is the part of the server that faces the network.
append_cflags(%w[-std=c99 -O2 -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers])
create_makefile("spindle_http")
