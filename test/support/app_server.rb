# frozen_string_literal: true

require "uri"
require "cgi"
require "pg"
require_relative "spindle_process"
require_relative "command_process"
require_relative "postgres_server"

# Serving the apps of test/apps/ (each with its own Gemfile) the ways a team
# would: the clone's bin/spindle under the app's bundle, `bundle exec spindle`
# and `bin/rails server -u spindle` in the app's directory.
module AppServer
  APPS = File.join(SpindleProcess::ROOT, "test", "apps")
  # A Rails app boots in its class's first test, after its schema load and
  # asset compile: three times the deadlines of a bare server (YJIT compiles
  # as it boots, and a busy machine runs other files meanwhile).
  BOOT_DEADLINE = SpindleProcess::START_DEADLINE * 3
  BOOT_PHASE_TIMEOUT = SpindleIntegrationTest::PHASE_TIMEOUT * 3

  module_function

  def dir(app) = File.join(APPS, app)

  # The environment of a process started in the app's directory: none of the
  # variables the test process's own Bundler set (BUNDLE_GEMFILE,
  # RUBYOPT=-rbundler/setup, BUNDLE_WITH=test...). What a user's shell has:
  # each command finds the app's Gemfile itself (bundle exec and bin/rails in
  # the directory, bin/spindle beside the rackup file).
  def environment(_app, extra = {})
    base = defined?(Bundler) ? Bundler.unbundled_env : ENV.to_h
    base.reject { |name, _| name.start_with?("BUNDLE") }.merge(extra)
  end

  # Options for SpindleProcess: the app's directory and environment.
  def spawn_options(app, extra_env = {})
    { chdir: dir(app), env: environment(app, extra_env), unsetenv_others: true }
  end

  # Runs a command in the app's bundle to completion (a rake task); raises
  # with its output when it fails.
  def run!(app, *command, env: {})
    output = IO.popen(environment(app, env), command, chdir: dir(app), unsetenv_others: true,
                                                      err: %i[child out], &:read)
    raise "#{command.join(' ')} failed in test/apps/#{app}:\n#{output}" unless $?.success?

    output
  end

  # A fresh database on this process's PostgreSQL server; returns its URL.
  def create_database(prefix)
    name = "#{prefix}_#{Process.pid}_#{rand(1 << 20)}"
    admin = PG.connect(PostgresServer.shared.url)
    admin.exec("create database #{admin.quote_ident(name)}")
    PostgresServer.shared.url.sub(%r{:///postgres\?}, ":///#{name}?")
  ensure
    admin&.close
  end

  # Each engine, and a two-worker cluster started with `bundle exec spindle`
  # as a team runs it: label => [flags, bundle exec?].
  SERVINGS = {
    "Blocking" => [%w[--engine blocking], false],
    "Threads" => [%w[--engine threads], false],
    "Fibers" => [%w[--engine fibers], false],
    "Hybrid" => [%w[--engine hybrid --loops 2], false],
    "Cluster" => [%w[-w 2], true],
  }.freeze

  # Defines one test class per serving (e.g. RailsFibersAppTest) from an
  # app's contract; the fiber engines also get the overlap contract.
  def define_tests(prefix, contract, overlap)
    SERVINGS.each do |label, (flags, bundle_exec)|
      klass = Class.new(SpindleIntegrationTest) do
        include contract
        include overlap if %w[Fibers Hybrid].include?(label)
        define_singleton_method(:server_flags) { flags }
        define_singleton_method(:bundle_exec?) { bundle_exec }
      end
      Object.const_set("#{prefix}#{label}AppTest", klass)
    end
  end
end

# A browser's part in a form round trip: keeps the cookies the app sets (the
# session that holds the CSRF secret) and reads the hidden fields of a form
# (the authenticity token, Rails' _method), so a test posts what a browser
# would have posted.
class FormClient
  FORM = %r{<form\b([^>]*)>(.*?)</form>}m
  INPUT = /<input\b([^>]*)>/
  HIDDEN = /\btype="hidden"/

  def initialize(process)
    @process = process
    @cookies = {}
  end

  def get(path, deadline: HttpClient::DEFAULT_DEADLINE) = send_request("GET", path, deadline: deadline)

  def post(path, fields)
    body = URI.encode_www_form(fields)
    send_request("POST", path, [["Content-Type", "application/x-www-form-urlencoded"]], body)
  end

  # A multipart/form-data post, as a browser sends a form with a file field:
  # +fields+ as text parts, then +file+ ([field name, file name, bytes]).
  def post_multipart(path, fields, file, deadline: HttpClient::DEFAULT_DEADLINE)
    boundary = "----spindle-test-#{rand(1 << 64).to_s(16)}"
    body = String.new(encoding: Encoding::BINARY)
    fields.each do |name, value|
      body << "--#{boundary}\r\nContent-Disposition: form-data; name=\"#{name}\"\r\n\r\n#{value}\r\n".b
    end
    name, filename, bytes = file
    body << "--#{boundary}\r\nContent-Disposition: form-data; name=\"#{name}\"; filename=\"#{filename}\"\r\n" \
            "Content-Type: application/octet-stream\r\n\r\n".b << bytes.b << "\r\n--#{boundary}--\r\n".b
    send_request("POST", path, [["Content-Type", "multipart/form-data; boundary=#{boundary}"]], body,
                 deadline: deadline)
  end

  # The hidden fields of the form whose action is +action+ in +html+.
  def self.hidden_fields(html, action)
    html.scan(FORM).each do |attributes, inner|
      next unless attribute(attributes, "action") == action

      inputs = inner.scan(INPUT).map(&:first).grep(HIDDEN)
      return inputs.to_h { |input| [attribute(input, "name"), CGI.unescapeHTML(attribute(input, "value").to_s)] }
    end
    raise "no form with action #{action.inspect} in:\n#{html}"
  end

  def self.attribute(tag, name)
    tag[/\b#{name}="([^"]*)"/, 1]
  end

  # The path a redirect points to.
  def self.location_path(response)
    URI(response["location"]).path
  end

  private

  def send_request(method, path, headers = [], body = nil, deadline: HttpClient::DEFAULT_DEADLINE)
    headers += [["Cookie", @cookies.map { |name, value| "#{name}=#{value}" }.join("; ")]] unless @cookies.empty?
    connection = @process.connect
    connection.write(HttpClient.request(method, path, headers + [["Connection", "close"]], body: body),
                     deadline: deadline)
    response = connection.read_response(deadline: deadline)
    remember(response)
    response
  ensure
    connection&.close
  end

  def remember(response)
    response.values("set-cookie").each do |line|
      name, value = line.split(";", 2).first.split("=", 2)
      @cookies[name] = value
    end
  end
end

# The fiber engines' proof of overlap, inside the database: the test holds an
# exclusive advisory lock, each of +count+ GET /wait?key=K requests waits for
# a shared one, and the test counts the app's backends waiting on a lock. A
# server that ran the requests one by one could never have them all waiting
# at once, and would fail on the deadline.
module DatabaseWaiters
  WAITING = "select count(*) from pg_stat_activity where application_name = $1 and wait_event_type = 'Lock'"

  def assert_requests_wait_at_once(app, database_url, application_name, count)
    db = PG.connect(database_url)
    key = rand(1 << 30)
    db.exec_params("select pg_advisory_lock($1)", [key])
    clients = Array.new(count) do
      connect(app).tap { |c| c.write(request("GET", "/wait?key=#{key}", [["Connection", "close"]])) }
    end
    wait_until("#{count} requests waiting in the database at once", interval: 0.02) do
      db.exec_params(WAITING, [application_name]).getvalue(0, 0).to_i == count
    end
    db.exec_params("select pg_advisory_unlock($1)", [key])
    clients.each { |c| assert_equal "waited\n", c.read_response.body }
  ensure
    db&.close
  end
end
