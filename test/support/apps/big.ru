# frozen_string_literal: true

# Large responses for slow-reader tests. GET /array?mib=N: N MiB as an Array
# of 64 KiB parts; /stream?mib=N: the same bytes as a streamed (chunked) body;
# /small: a few bytes. Part i is filled with byte (i % 251), so bytes out of
# order or lost are visible in the digest.
PART = 64 * 1024

def parts(mib)
  Array.new(mib * 16) { |i| (i % 251).chr * PART }
end

run lambda { |env|
  mib = Integer(env["QUERY_STRING"][/mib=(\d+)/, 1] || "1")
  case env["PATH_INFO"]
  when "/array" then [200, { "content-type" => "application/octet-stream" }, parts(mib)]
  when "/stream" then [200, { "content-type" => "application/octet-stream" }, parts(mib).each]
  else [200, { "content-type" => "text/plain" }, ["small\n"]]
  end
}
