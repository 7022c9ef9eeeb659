# frozen_string_literal: true

# Targets for clients that reset mid-request and mid-response:
#   /big     a 4 MiB response (the client stops reading and resets)
#   /upload  reads the whole body
#   /hijack  full hijack that echoes until the client goes away, then closes
CHUNK = ("x" * 65_536).freeze

app = lambda do |env|
  case env["PATH_INFO"]
  when "/big" then [200, { "content-type" => "text/plain" }, Array.new(64, CHUNK)]
  when "/upload" then [200, { "content-type" => "text/plain" }, [env["rack.input"].read.bytesize.to_s]]
  when "/hijack"
    io = env["rack.hijack"].call
    begin
      io.write("HTTP/1.1 200 OK\r\nconnection: close\r\n\r\n")
      loop { io.write(io.readpartial(1024)) }
    rescue IOError, SystemCallError
      nil
    ensure
      io.close
    end
    [200, {}, []]
  else [200, { "content-type" => "text/plain" }, ["ok"]]
  end
end

run app
