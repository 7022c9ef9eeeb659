# frozen_string_literal: true

# The multi-host tests' load (run inside the client namespace, standard
# library only): client threads of four kinds, each sending requests back to
# back through the load balancer until a stop file appears, or a time or
# request cap is reached (every loop is bounded):
#   keepalive-get   one persistent connection, GET /
#   keepalive-post  one persistent connection, POST with a 1-32 KiB body
#   close-get       a new connection per request, Connection: close
#   close-post      the same with POST
# Every request is one JSON line in --out, written as it completes:
#   {"k": kind, "s": start, "e": end (CLOCK_MONOTONIC, shared by every
#    process on the machine), "ok": true|false, "st": status, "err": why,
#    "v": app version, "h": host}
# A request is ok only with status 200 and the body the app owes: a POST's
# answer names the size and SHA-256 of the body sent. Net::HTTP's own retry
# of idempotent requests is off: the client counts what a request meets,
# the load balancer alone retries.
#
#   ruby load_client.rb --url http://10.77.0.2:8080 --threads 2 --out load.jsonl \
#        --stop-file stop --max-seconds 300 --max-requests 200000
require "digest/sha2" # loaded here: Digest's autoload is not thread-safe (threads raced it)
require "json"
require "net/http"
require "optparse"
require "securerandom"

class LoadClient
  KINDS = %w[keepalive-get keepalive-post close-get close-post].freeze
  ANSWER = /\A\S+ h\d+\z/ # "VERSION HOST"

  def initialize(options)
    @uri = URI(options.fetch(:url))
    @options = options
    @records = Queue.new
    @count = 0
    @lock = Mutex.new
    @deadline = now + options.fetch(:max_seconds)
  end

  def run
    writer = Thread.new { write(@options.fetch(:out)) }
    threads = KINDS.flat_map { |kind| Array.new(@options.fetch(:threads)) { Thread.new { loop_kind(kind) } } }
    threads.each(&:join)
    @records << :done
    writer.join
  end

  private

  def now = Process.clock_gettime(Process::CLOCK_MONOTONIC)

  def go_on?
    return false if now > @deadline || File.exist?(@options.fetch(:stop_file))

    @lock.synchronize { (@count += 1) <= @options.fetch(:max_requests) }
  end

  def loop_kind(kind)
    http = nil
    while go_on?
      http = connect if http.nil? || kind.start_with?("close")
      record, keep = one(http, kind)
      @records << record
      unless keep
        http.finish if http.started?
        http = nil
      end
    end
  ensure
    http&.finish if http&.started?
  end

  def connect
    http = Net::HTTP.new(@uri.host, @uri.port)
    http.max_retries = 0
    http.open_timeout = 5
    http.read_timeout = 30
    http.write_timeout = 30
    http.start
  end

  # [record, whether the connection may serve the next request]
  def one(http, kind)
    start = now
    request, expected = build(kind)
    response = http.request(request)
    ok = response.code == "200" && (expected ? response.body == expected : ANSWER.match?(response.body.to_s))
    [{ k: kind, s: start, e: now, ok: ok, st: response.code.to_i, v: response["x-app-version"],
       h: response["x-host"], err: ok ? nil : "body #{response.body.to_s[0, 80].inspect}" }.compact,
     !kind.start_with?("close") && response["connection"] != "close"]
  rescue StandardError => e
    [{ k: kind, s: start, e: now, ok: false, st: 0, err: "#{e.class}: #{e.message}"[0, 200] }, false]
  end

  def build(kind)
    header = kind.start_with?("close") ? { "connection" => "close" } : {}
    return [Net::HTTP::Get.new("/", header), nil] if kind.end_with?("get")

    body = SecureRandom.random_bytes(rand(1024..32 * 1024))
    post = Net::HTTP::Post.new("/upload", header.merge("content-type" => "application/octet-stream"))
    post.body = body
    [post, "#{body.bytesize} #{Digest::SHA256.hexdigest(body)}"]
  end

  def write(path)
    File.open(path, "a") do |file|
      file.sync = true
      while (record = @records.pop) != :done
        file.write("#{JSON.generate(record)}\n")
      end
    end
  end
end

if $PROGRAM_NAME == __FILE__
  options = { threads: 1, max_seconds: 300.0, max_requests: 500_000 }
  OptionParser.new do |opts|
    opts.on("--url URL") { |v| options[:url] = v }
    opts.on("--threads N", Integer, "threads per kind") { |v| options[:threads] = v }
    opts.on("--out FILE") { |v| options[:out] = v }
    opts.on("--stop-file FILE") { |v| options[:stop_file] = v }
    opts.on("--max-seconds S", Float) { |v| options[:max_seconds] = v }
    opts.on("--max-requests N", Integer) { |v| options[:max_requests] = v }
  end.parse!
  LoadClient.new(options).run
end
