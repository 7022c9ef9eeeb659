# frozen_string_literal: true

# Full hijack: the app takes the socket through env["rack.hijack"], writes a
# whole HTTP response itself, then keeps talking on the raw connection: it
# reads 5 bytes from the client and echoes them back before closing. The
# Rack response it returns afterwards must be ignored by the server.
hijack = lambda do |env|
  # Rack 3: env["rack.hijack"] offers full hijack; "rack.hijack?" only partial.
  unless env["rack.hijack"]
    body = "rack.hijack missing\n"
    return [501, { "content-type" => "text/plain", "content-length" => body.bytesize.to_s }, [body]]
  end

  io = env["rack.hijack"].call
  begin
    io.write("HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\nhijacked\n")
    ping = io.read(5)
    io.write("echo: #{ping}")
  ensure
    io.close
  end
  [200, { "content-type" => "text/plain" }, ["this must never be sent\n"]]
end

run Rack::Lint.new(hijack)
