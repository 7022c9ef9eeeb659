# frozen_string_literal: true

# Echoes the request back as JSON: what the server put in the env and the body
# it handed the app. Tests compare this with what they sent.
require "json"
# digest/sha2, not digest: Digest autoloads SHA256 on first use, and two
# threads doing that at once raise "Digest::Base cannot be directly inherited".
require "digest/sha2"

echo = lambda do |env|
  input = env["rack.input"]
  body = input ? input.read : +""
  fields = env.select { |key, _| key.start_with?("HTTP_") || %w[CONTENT_TYPE CONTENT_LENGTH].include?(key) }
  payload = {
    "method" => env["REQUEST_METHOD"],
    "script_name" => env["SCRIPT_NAME"],
    "path" => env["PATH_INFO"],
    "query" => env["QUERY_STRING"],
    "protocol" => env["SERVER_PROTOCOL"],
    "server_name" => env["SERVER_NAME"],
    "server_port" => env["SERVER_PORT"],
    "remote_addr" => env["REMOTE_ADDR"],
    "remote_port" => env["REMOTE_PORT"],
    "url_scheme" => env["rack.url_scheme"],
    "multithread" => env["rack.multithread"],
    "multiprocess" => env["rack.multiprocess"],
    "run_once" => env["rack.run_once"],
    "rack_env" => ENV["RACK_ENV"],
    "hijack" => env["rack.hijack?"] ? true : false,
    "full_hijack" => env["rack.hijack"].respond_to?(:call),
    "early_hints" => env["rack.early_hints"].respond_to?(:call),
    "response_finished" => env["rack.response_finished"].is_a?(Array),
    "headers" => fields.transform_values { |value| value.dup.force_encoding(Encoding::UTF_8).scrub },
    "body_size" => body.bytesize,
    "body_sha256" => Digest::SHA256.hexdigest(body),
    "body" => body.bytesize <= 1024 * 1024 ? body.dup.force_encoding(Encoding::UTF_8).scrub : nil
  }
  json = JSON.generate(payload)
  [200, { "content-type" => "application/json", "content-length" => json.bytesize.to_s }, [json]]
end

run Rack::Lint.new(echo)
