# frozen_string_literal: true

# The app bin/spindle serves when given no rackup file and there is no ./config.ru.
run lambda { |env|
  body = "Spindle #{Spindle::VERSION} is serving. Pass a config.ru to serve your app.\n" \
         "engine: #{env['rack.multithread'] ? 'multithreaded' : 'single-threaded'}\n"
  [200, { "content-type" => "text/plain" }, [body]]
}
