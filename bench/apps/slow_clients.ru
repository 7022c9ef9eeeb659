# frozen_string_literal: true

# Scenario "slow_clients": GET / is the hello app (the normal clients wrk
# measures); POST / answers the same once the server has read the body (the
# slow-body attack's target); GET /big is 1 MiB, so a client that reads
# slowly (the slow-read attack) fills the socket buffers and the server has
# to wait for it.
BIG = ("x" * 1023 + "\n").b * 1024
BIG.freeze
HELLO = [200, { "content-type" => "text/plain" }, ["Hello World"]].freeze

run lambda { |env|
  if env["PATH_INFO"] == "/big"
    [200, { "content-type" => "text/plain", "content-length" => BIG.bytesize.to_s }, [BIG]]
  else
    env["rack.input"]&.read
    [200, { "content-type" => "text/plain" }, ["Hello World"]]
  end
}
