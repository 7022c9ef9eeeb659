# frozen_string_literal: true

require "digest"
require "json"
require "uri"
require_relative "../support/app_server"
require_relative "../support/websocket_client"

# test/apps/rails8, a Rails 8 app as `rails new -d postgresql` makes it, with
# what teams use Rails 8 for: a scaffold behind CSRF, Action Cable on
# PostgreSQL's LISTEN/NOTIFY, server-sent events through ActionController::Live,
# a multipart upload and a send_file download. Rails 8 needs Ruby 3.2, so this
# runs on the 3.3 and 3.4 lanes (bin/test-ruby3.3, bin/test-ruby3.4) and skips
# on 3.1, where bin/test does not even bundle the app.
#
# Which servings (about three minutes on the 3.3 lane): every engine single
# through `bin/rails server -u spindle` (the engine from SPINDLE_ENGINE in the
# app's config/spindle.rb), and two workers (`-w 2`) through `bundle exec
# spindle` on threads (Rails' default engine) and fibers (the other way a
# hijacked socket is handed over, through the fiber scheduler). With two
# workers what matters is the cluster, not the engine: a broadcast sent from
# one worker reaches a socket the other holds, which hybrid would show the same
# way at the cost of one more Rails boot.
module Rails8App
  APP = "rails8"
  SECRET_KEY_BASE = "spindle-test-secret-key-base-" * 4
  SKIP = "Rails 8 needs Ruby 3.2 or later, this is #{RUBY_VERSION}: test/apps/rails8 runs on the Ruby 3.3 " \
         "and 3.4 lanes (bin/test-ruby3.3, bin/test-ruby3.4)".freeze
  DOWNLOAD_SIZE = 50 * 1024 * 1024
  CABLE_PROTOCOLS = %w[actioncable-v1-json actioncable-unsupported].freeze # what @rails/actioncable offers

  module_function

  def supported? = Gem::Version.new(RUBY_VERSION) >= Gem::Version.new("3.2")

  # One database for the whole file, its schema loaded and the assets
  # compiled as a deploy would.
  def database_url
    @database_url ||= AppServer.create_database("spindle_rails8").tap do |url|
      AppServer.run!(APP, RbConfig.ruby, "bin/rails", "db:schema:load", env: environment(url))
      AppServer.run!(APP, RbConfig.ruby, "bin/rails", "assets:precompile", env: environment(url))
    end
  end

  # A 50 MB file of random bytes, uploaded and served back with send_file.
  def download_file
    @download_file ||= File.join(Dir.mktmpdir("spindle-rails8"), "large.bin").tap do |path|
      random = Random.new(67)
      File.open(path, "wb") { |file| 50.times { file.write(random.bytes(1024 * 1024)) } }
    end
  end

  def environment(url = database_url, extra = {})
    { "RAILS_ENV" => "production", "RACK_ENV" => "production", "SECRET_KEY_BASE" => SECRET_KEY_BASE,
      "DATABASE_URL" => url, "RAILS_MAX_THREADS" => "10", "RAILS_LOG_LEVEL" => "warn",
      "DOWNLOAD_FILE" => download_file }.merge(extra)
  end

  def spawn_options(application_name, extra = {})
    AppServer.spawn_options(APP, environment("#{database_url}&application_name=#{application_name}", extra))
  end
end

# What every serving shows; the server is booted once per class.
module Rails8AppContract
  def self.included(base)
    base.extend(ClassMethods)
  end

  module ClassMethods
    def app_server
      @app_server = nil if @app_server && !@app_server.alive?
      @app_server ||= start_app
    end

    private

    def start_app
      options = Rails8App.spawn_options("spindle-rails8-#{name}", serving_env)
      if rails_server?
        pid_file = File.join(Dir.mktmpdir("spindle-rails8"), "server.pid")
        CommandProcess.start([RbConfig.ruby, "bin/rails", "server"], "-u", "spindle", "-b", "127.0.0.1", "-p", "0",
                             "-P", pid_file, start_deadline: AppServer::BOOT_DEADLINE, **options)
      else
        CommandProcess.start(%w[bundle exec spindle], "-b", SpindleIntegrationTest::LOOPBACK, *server_flags,
                             start_deadline: AppServer::BOOT_DEADLINE, **options)
      end
    end
  end

  def setup
    skip Rails8App::SKIP unless Rails8App.supported?
    super
  end

  def app = self.class.app_server

  def phase_timeout = AppServer::BOOT_PHASE_TIMEOUT

  def test_the_start_line_names_the_serving
    assert_match(/ engine=#{self.class.serving_env.fetch('SPINDLE_ENGINE')} /, app.start_line)
    assert_match(/ workers=2 /, app.start_line) if self.class.workers == 2
  end

  # GET the form, POST it back with its token and the session cookie: 302 to
  # the post's page. Without the token: 422.
  def test_scaffold_create_with_the_authenticity_token
    client = FormClient.new(app)
    fields = FormClient.hidden_fields(client.get("/posts/new").body, "/posts")
    assert fields["authenticity_token"], "the form carries Rails' authenticity token"
    assert_equal 422, client.post("/posts", "post[title]" => "forged").status, "a post without the token is refused"

    created = client.post("/posts", fields.merge("post[title]" => "rails 8 #{name}", "post[body]" => "hello"))
    assert_equal 302, created.status, created.to_s
    post = FormClient.location_path(created)
    assert_match %r{\A/posts/\d+\z}, post
    assert_includes client.get(post).body, "rails 8 #{name}"
  end

  # A real WebSocket client subscribes to ChatChannel; a broadcast sent by an
  # ordinary request reaches it. With two workers the broadcast comes from the
  # worker that does not hold the socket, through PostgreSQL.
  def test_an_action_cable_broadcast_reaches_a_subscriber
    cable = CableClient.new(app)
    holder = cable.subscribe("ChatChannel")
    text, sender = broadcast_until { |pid| self.class.workers == 1 || pid != holder }
    refute_equal holder, sender, "the broadcast came from the other worker" if self.class.workers == 2
    message = cable.receive_until { |m| m["text"] == text }
    assert_equal sender, message["worker"]
    cable.close
  rescue WebSocketClient::Failure => e
    flunk "Action Cable: #{e.message}\n#{app.output}"
  end

  # Server-sent events through ActionController::Live: the first event arrives
  # while the action waits in PostgreSQL for the lock this test holds, so it
  # was streamed, not buffered; the second follows the unlock.
  def test_server_sent_events_stream
    db = PG.connect(Rails8App.database_url)
    key = rand(1 << 30)
    db.exec_params("select pg_advisory_lock($1)", [key])
    connection = connect(app)
    connection.write(request("GET", "/events?key=#{key}", [["Accept", "text/event-stream"]]))
    head = connection.read_head
    assert_equal 200, head.status
    assert_match %r{\Atext/event-stream}, head["content-type"]
    stream = SseReader.new(connection)
    first = stream.next_event("the first event, written before the action waits")
    assert_equal({ "id" => "1", "event" => "tick" }, first.slice("id", "event"))
    assert_equal 1, JSON.parse(first["data"])["n"]
    db.exec_params("select pg_advisory_unlock($1)", [key])
    assert_equal 2, JSON.parse(stream.next_event("the second event, after the unlock")["data"])["n"]
    assert_nil connection.read_chunk, "the stream ends after the action returns"
  ensure
    db&.close
  end

  # A 50 MB multipart upload through the upload form, with its token: the app
  # answers the size and SHA-256 it received.
  def test_multipart_upload
    client = FormClient.new(app)
    fields = FormClient.hidden_fields(client.get("/uploads/new").body, "/uploads")
    bytes = File.binread(Rails8App.download_file)
    response = client.post_multipart("/uploads", fields, ["file", "large.bin", bytes], deadline: 60)
    assert_equal 200, response.status, response.to_s[0, 2000]
    assert_equal "large.bin size=#{bytes.bytesize} sha256=#{Digest::SHA256.hexdigest(bytes)}\n", response.body
  end

  # send_file of the 50 MB file: every byte, in order.
  def test_send_file_of_a_large_file
    response = FormClient.new(app).get("/download", deadline: 60)
    assert_equal 200, response.status, response.to_s[0, 2000]
    assert_equal Rails8App::DOWNLOAD_SIZE.to_s, response["content-length"]
    assert_equal Digest::SHA256.file(Rails8App.download_file).hexdigest, Digest::SHA256.hexdigest(response.body)
  end

  private

  # Broadcasts through POST /broadcasts (the chat page's form and token)
  # until one is sent by a process +wanted+ accepts; returns [text, its pid].
  def broadcast_until(&wanted)
    client = FormClient.new(app)
    fields = FormClient.hidden_fields(client.get("/chat").body, "/broadcasts")
    sent = nil
    wait_until("a broadcast sent from the wanted worker", deadline: 20) do
      text = "hello #{name} #{rand(1 << 30)}"
      response = client.post("/broadcasts", fields.merge("text" => text))
      assert_equal 200, response.status, response.to_s
      pid = Integer(response.body[/broadcast from (\d+)/, 1])
      sent = [text, pid] if wanted.call(pid)
    end
    sent
  end
end

# One page and one Action Cable round trip in headless Chromium (the browser
# the suite installs, as test/integration/browser_test.rb uses it): /chat
# loads its stylesheet and import-mapped modules, subscribes to ChatChannel
# with @rails/actioncable, posts its broadcast form with fetch once
# subscribed, and writes what the channel sends into the page. The test asks
# the page through the DevTools protocol until the message is there: the
# --dump-dom of browser_test.rb dumps once fetches are done, and a WebSocket
# message is not a fetch it waits for.
module Rails8BrowserContract
  RECEIVED = "received: hello from the browser"

  def test_chromium_loads_the_chat_page_and_receives_a_broadcast
    browser = HeadlessChromium.open("#{app.url}/chat")
    message = "document.querySelector('#messages .message')?.textContent"
    wait_until("the page showing #{RECEIVED.inspect}", deadline: 20) { browser.evaluate(message) }
    assert_equal "Chat", browser.evaluate("document.querySelector('h1').textContent"), "the page rendered"
    assert_equal RECEIVED, browser.evaluate(message)
  rescue Minitest::Assertion => e
    raise e, "#{e.message}\n#{browser&.evaluate('document.documentElement.outerHTML')}\n#{app.output}"
  ensure
    browser&.close
  end
end

# Headless Chromium driven over its DevTools protocol (a WebSocket, through
# WebSocketClient): one page, and JavaScript evaluated in it.
class HeadlessChromium
  PATH = "/usr/bin/chromium"
  FLAGS = %w[--headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking
             --disable-component-update --disable-sync --remote-debugging-port=0].freeze
  LISTENING = %r{DevTools listening on ws://127\.0\.0\.1:(\d+)/}

  def self.open(url)
    raise Minitest::Assertion, "#{PATH} is missing: bin/test installs it" unless File.executable?(PATH)

    new(url)
  end

  def initialize(url)
    @profile = Dir.mktmpdir("spindle-chromium")
    reader, writer = IO.pipe
    @pid = Process.spawn(PATH, *FLAGS, "--user-data-dir=#{@profile}", url, out: File::NULL, err: writer,
                                                                          pgroup: true)
    writer.close
    port = Integer(read_until(reader, LISTENING)[1])
    @drain = Thread.new { reader.each_line { nil } } # a full pipe would stall the browser
    @page = WebSocketClient.new("127.0.0.1", port, URI(page_target(port)["webSocketDebuggerUrl"]).path)
    @ids = 0
  end

  # The value of a JavaScript expression in the page.
  def evaluate(expression)
    id = (@ids += 1)
    @page.send_text(JSON.generate("id" => id, "method" => "Runtime.evaluate",
                                  "params" => { "expression" => expression, "returnByValue" => true }))
    loop do
      answer = JSON.parse(@page.receive)
      return answer.dig("result", "result", "value") if answer["id"] == id
    end
  end

  def close
    @page&.abort
    Process.kill(:KILL, -@pid)
    Process.wait(@pid)
    @drain&.join(5)
    FileUtils.rm_rf(@profile)
  end

  private

  def read_until(io, pattern, deadline: HttpClient::DEFAULT_DEADLINE)
    limit = Process.clock_gettime(Process::CLOCK_MONOTONIC) + deadline
    text = +""
    until (match = text.match(pattern))
      remaining = limit - Process.clock_gettime(Process::CLOCK_MONOTONIC)
      raise Minitest::Assertion, "Chromium did not start within #{deadline}s: #{text}" \
        unless remaining.positive? && io.wait_readable(remaining)

      text << (io.read_nonblock(4096, exception: false) || raise(Minitest::Assertion, "Chromium exited: #{text}"))
    end
    match
  end

  # The page Chromium opened, from its /json/list (DevTools wants a Host it knows).
  def page_target(port)
    connection = HttpClient.connect("127.0.0.1", port)
    connection.write(HttpClient.request("GET", "/json/list", [["Host", "127.0.0.1:#{port}"], ["Connection", "close"]]))
    JSON.parse(connection.read_response.body).find { |target| target["type"] == "page" } or
      raise Minitest::Assertion, "Chromium lists no page"
  ensure
    connection&.close
  end
end

# Action Cable's protocol over WebSocketClient, with the Origin header a
# browser sends (Action Cable refuses other origins).
class CableClient
  def initialize(app)
    @socket = WebSocketClient.new(app.host, app.port, "/cable", headers: { "Origin" => app.url },
                                                                protocols: Rails8App::CABLE_PROTOCOLS)
    welcome = receive
    raise WebSocketClient::Failure, "no welcome: #{welcome.inspect}" unless welcome["type"] == "welcome"
  end

  # Subscribes and waits for the confirmation (sent once the channel's LISTEN
  # is in place); returns the pid of the worker holding the socket, which the
  # channel transmits on subscribing.
  def subscribe(channel)
    @identifier = JSON.generate("channel" => channel)
    @socket.send_text(JSON.generate("command" => "subscribe", "identifier" => @identifier))
    worker = nil
    limit = clock + HttpClient::DEFAULT_DEADLINE
    loop do
      frame = receive(deadline: limit - clock)
      worker = frame.dig("message", "worker") if frame["message"]
      raise WebSocketClient::Failure, "subscription rejected" if frame["type"] == "reject_subscription"
      return worker if frame["type"] == "confirm_subscription"
    end
  end

  # The next channel message for which the block is true (others are
  # skipped), within +deadline+ seconds: pings keep arriving meanwhile.
  def receive_until(deadline: HttpClient::DEFAULT_DEADLINE)
    limit = clock + deadline
    loop do
      remaining = limit - clock
      raise WebSocketClient::Failure, "no such message within #{deadline}s" unless remaining.positive?

      frame = receive(deadline: remaining)
      return frame["message"] if frame["identifier"] == @identifier && frame["message"] && yield(frame["message"])
    end
  end

  def close = @socket.close

  private

  # The next frame that is not a ping (Action Cable pings every 3 s).
  def receive(deadline: HttpClient::DEFAULT_DEADLINE)
    limit = clock + deadline
    loop do
      frame = JSON.parse(@socket.receive(deadline: [limit - clock, 0.001].max))
      return frame unless frame["type"] == "ping"
    end
  end

  def clock = Process.clock_gettime(Process::CLOCK_MONOTONIC)
end

# Reads server-sent events from a chunked response, one at a time.
class SseReader
  def initialize(connection)
    @connection = connection
    @buffer = +""
  end

  def next_event(what)
    until (index = @buffer.index("\n\n"))
      chunk = @connection.read_chunk
      raise HttpClient::ProtocolError, "the stream ended before #{what}: #{@buffer.inspect}" unless chunk

      @buffer << chunk
    end
    block = @buffer.slice!(0, index + 2)
    block.lines(chomp: true).reject(&:empty?).to_h { |line| line.split(": ", 2) }
  rescue HttpClient::Timeout
    raise HttpClient::Timeout, "no #{what} within the deadline (got #{@buffer.inspect}): a buffered stream?"
  end
end

# label => [SPINDLE_ENGINE, workers, through `bin/rails server`?]
{
  "Blocking" => ["blocking", 1, true],
  "Threads" => ["threads", 1, true],
  "Fibers" => ["fibers", 1, true],
  "Hybrid" => ["hybrid", 1, true],
  "ThreadsCluster" => ["threads", 2, false],
  "FibersCluster" => ["fibers", 2, false],
}.each do |label, (engine, workers, rails_server)|
  klass = Class.new(SpindleIntegrationTest) do
    include Rails8AppContract
    include Rails8BrowserContract if label == "Threads"
    define_singleton_method(:serving_env) { { "SPINDLE_ENGINE" => engine } }
    define_singleton_method(:workers) { workers }
    define_singleton_method(:rails_server?) { rails_server }
    define_singleton_method(:server_flags) { workers == 2 ? %w[-w 2] : [] }
  end
  Object.const_set("Rails8#{label}AppTest", klass)
end
