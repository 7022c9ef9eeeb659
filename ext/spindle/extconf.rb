# frozen_string_literal: true

require "mkmf"

# Warnings on, and strict: the parser is the part of the server that faces the network.
append_cflags(%w[-std=c99 -O2 -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers])
# A Hash made with room (Parser.sized_hash): Ruby 3.2+ declares
# rb_hash_new_capa; 3.1 exports rb_hash_new_with_size without declaring it.
have_func("rb_hash_new_capa", "ruby.h") || have_func("rb_hash_new_with_size")
create_makefile("spindle_http")
