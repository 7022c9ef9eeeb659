# frozen_string_literal: true

# Reads the request body in pieces and reports its size and digest, and how
# the server buffered it: the class of rack.input as the server passed it
# (looked at before Rack::Lint wraps it) and whether it is file-backed.
require "json"
# digest/sha2, not digest: Digest autoloads SHA256 on first use, and two
# threads doing that at once raise "Digest::Base cannot be directly inherited".
require "digest/sha2"
require "tempfile"

measure = lambda do |env|
  input = env["rack.input"]
  digest = Digest::SHA256.new
  size = 0
  buffer = +""
  while input && input.read(64 * 1024, buffer)
    size += buffer.bytesize
    digest << buffer
  end
  payload = env["spindle.test.input"].merge("body_size" => size, "body_sha256" => digest.hexdigest)
  json = JSON.generate(payload)
  [200, { "content-type" => "application/json", "content-length" => json.bytesize.to_s }, [json]]
end

linted = Rack::Lint.new(measure)

describe_input = lambda do |env|
  input = env["rack.input"]
  env["spindle.test.input"] = {
    "input_class" => input.class.name,
    "file_backed" => input.is_a?(File) || input.is_a?(Tempfile) || (input.respond_to?(:to_io) && input.to_io.is_a?(File))
  }
  linted.call(env)
end

run describe_input
