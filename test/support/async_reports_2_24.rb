# frozen_string_literal: true

# Loaded with -r by AsyncGuardBootTest: the installed async, reporting itself
# as 2.24.0, the release that crashes on Ruby 3.1. Only the version the guard
# reads changes; nothing of async's behaviour is replaced.
require "async"
Async.send(:remove_const, :VERSION)
Async::VERSION = "2.24.0"
