# frozen_string_literal: true

# Partial hijack: the app returns status and headers with a "rack.hijack"
# callable; the server writes the head and hands the socket to the callable,
# which writes the body bytes raw, reads 5 bytes from the client and echoes
# them back, then closes.
partial = lambda do |env|
  unless env["rack.hijack?"]
    body = "rack.hijack? missing\n"
    return [501, { "content-type" => "text/plain", "content-length" => body.bytesize.to_s }, [body]]
  end

  takeover = lambda do |io|
    io.write("partial\n")
    ping = io.read(5)
    io.write("echo: #{ping}")
  ensure
    io.close
  end
  [200, { "content-type" => "text/plain", "rack.hijack" => takeover }, []]
end

run Rack::Lint.new(partial)
