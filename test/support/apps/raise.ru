# frozen_string_literal: true

# Raises inside call. The message carries a marker the tests look for in the
# server's log (it must be there) and in the response (it must not be).
boom = lambda do |_env|
  raise ArgumentError, "spindle-test-boom: the app failed on purpose"
end

run Rack::Lint.new(boom)
