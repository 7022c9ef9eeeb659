# frozen_string_literal: true

# The smallest app: bin/spindle examples/hello/config.ru
run ->(_env) { [200, { "content-type" => "text/plain" }, ["Hello World\n"]] }
