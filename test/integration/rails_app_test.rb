# frozen_string_literal: true

require "spindle/boot/memory_setup"
require_relative "../support/app_server"

# test/apps/rails, a Rails 7.2 app with its own Gemfile, on ActiveRecord and
# the suite's PostgreSQL (schema loaded by `bin/rails db:schema:load` into a
# fresh database): served on every engine and as a cluster, it creates, lists,
# updates and deletes posts through its forms with Rails' authenticity token,
# and on the fiber engines several requests wait in the database at once.
module RailsApp
  APP = "rails"
  WAITERS = 5
  SECRET_KEY_BASE = "spindle-test-secret-key-base-" * 4

  module_function

  # One database for the whole file, its schema loaded as a deploy would.
  def database_url
    @database_url ||= AppServer.create_database("spindle_rails").tap do |url|
      AppServer.run!(APP, RbConfig.ruby, "bin/rails", "db:schema:load", env: environment(url))
    end
  end

  # Production, as deployed; extra wins (ISOLATION_LEVEL, SPINDLE_ENGINE...).
  def environment(url = database_url, extra = {})
    { "RAILS_ENV" => "production", "RACK_ENV" => "production", "SECRET_KEY_BASE" => SECRET_KEY_BASE,
      "DATABASE_URL" => url, "DB_POOL" => (WAITERS * 2).to_s }.merge(extra)
  end

  def spawn_options(application_name, extra = {})
    url = "#{database_url}&application_name=#{application_name}"
    AppServer.spawn_options(APP, environment(url, extra))
  end
end

module RailsAppContract
  def self.included(base)
    base.extend(ClassMethods)
  end

  # One server per class, booted on first use and killed at exit.
  module ClassMethods
    def app_server
      @app_server = nil if @app_server && !@app_server.alive?
      @app_server ||= start_app
    end

    def application_name = "spindle-rails-#{name}"

    private

    def start_app
      options = RailsApp.spawn_options(application_name)
      args = ["-b", SpindleIntegrationTest::LOOPBACK, *server_flags]
      deadline = AppServer::BOOT_DEADLINE
      return CommandProcess.start(%w[bundle exec spindle], *args, start_deadline: deadline, **options) if bundle_exec?

      SpindleProcess.start(*args, "config.ru", start_deadline: deadline, **options)
    end
  end

  def app = self.class.app_server

  def phase_timeout = AppServer::BOOT_PHASE_TIMEOUT

  def test_crud_through_forms_with_the_authenticity_token
    client = FormClient.new(app)
    fields = FormClient.hidden_fields(client.get("/posts/new").body, "/posts")
    assert_equal 422, client.post("/posts", "post[title]" => "forged").status, "a post without the token is refused"

    created = client.post("/posts", fields.merge("post[title]" => "first #{name}", "post[body]" => "hello"))
    assert_equal 303, created.status, created.to_s
    post = FormClient.location_path(created)
    assert_includes client.get(post).body, "first #{name}"

    edit = FormClient.hidden_fields(client.get("#{post}/edit").body, post)
    assert_equal "patch", edit["_method"]
    assert_equal 303, client.post(post, edit.merge("post[title]" => "renamed #{name}")).status
    assert_includes client.get("/posts").body, "renamed #{name}"

    delete = FormClient.hidden_fields(client.get(post).body, post)
    assert_equal "delete", delete["_method"]
    assert_equal 303, client.post(post, delete).status
    refute_includes client.get("/posts").body, "renamed #{name}"
    assert_equal 404, client.get(post).status
  end
end

# On the fiber engines, with the isolation level at :fiber, each request has
# its own ActiveRecord connection: WAITERS requests all wait in PostgreSQL for
# the test's lock at once. (At :thread they would queue on one connection.)
module RailsOverlapContract
  include DatabaseWaiters

  def test_requests_wait_in_the_database_at_once
    assert_requests_wait_at_once(app, RailsApp.database_url, self.class.application_name, RailsApp::WAITERS)
    refute_match(/isolation level/, app.output, "no isolation warning with the level at :fiber")
  end
end

AppServer.define_tests("Rails", RailsAppContract, RailsOverlapContract)

# Rails integration: the app's config/spindle.rb (engine from SPINDLE_ENGINE,
# threads from RAILS_MAX_THREADS, as Puma's config/puma.rb reads them) is read
# by `rails server -u spindle` and by `bundle exec spindle` with no -C; and a
# fiber engine warns at boot when the app's isolation level is not :fiber.
class RailsIntegrationTest < SpindleIntegrationTest
  def test_rails_server_reads_config_spindle_rb
    pid_file = File.join(Dir.mktmpdir("spindle-rails"), "server.pid")
    app = start([RbConfig.ruby, "bin/rails", "server"], "-u", "spindle", "-b", "127.0.0.1", "-p", "0", "-P", pid_file,
                env: { "SPINDLE_ENGINE" => "threads", "RAILS_MAX_THREADS" => "3" })
    assert_match(/ engine=threads threads=1:3 /, app.start_line)
    assert_equal 200, FormClient.new(app).get("/posts").status
  end

  # Issue 65, item 12: "=> Booting RackHandler", twice. Rails names the server
  # after the handler's module, and the allocator re-exec, done after Rails
  # had printed its boot lines, printed them again. The process that serves
  # is the re-executed one, with the allocator settings in its environment.
  def test_rails_server_boots_spindle_once
    pid_file = File.join(Dir.mktmpdir("spindle-rails"), "server.pid")
    app = start([RbConfig.ruby, "bin/rails", "server"], "-u", "spindle", "-b", "127.0.0.1", "-p", "0", "-P", pid_file,
                env: { "SPINDLE_ENGINE" => "threads" })
    assert_equal 200, FormClient.new(app).get("/posts").status
    assert_equal ["=> Booting Spindle"], app.output.lines.map(&:chomp).grep(/=> Booting/), app.output
    pid = app.start_line[/ pid=(\d+)/, 1]
    assert_includes File.binread("/proc/#{pid}/environ").split("\0"), "#{Spindle::MemorySetup::DONE}=1",
                    "the serving process is the re-executed one"
  end

  # Issue 67: USR2 under `rails server -u spindle` (alone) reruns the command
  # line rails server was started with; the new process takes the listener
  # over, and rails server's pid file names it once the old one has exited
  # (the old one's rackup exit hook deletes the file, whoever it names).
  def test_usr2_under_rails_server_restarts_with_its_command_line_and_keeps_the_pid_file
    pid_file = File.join(Dir.mktmpdir("spindle-rails"), "server.pid")
    app = start([RbConfig.ruby, "bin/rails", "server"], "-u", "spindle", "-b", "127.0.0.1", "-p", "0", "-P", pid_file,
                env: { "SPINDLE_ENGINE" => "threads" })
    assert_equal 200, FormClient.new(app).get("/posts").status
    old = app.start_line[/ pid=(\d+)/, 1].to_i
    Process.kill(:USR2, old)
    wait_until("the old process exits") { !app.alive? }
    successor = wait_until("the pid file names the new process") do
      pid = File.exist?(pid_file) && File.read(pid_file).to_i
      pid if pid && pid.positive? && pid != old
    end
    assert_match(/told the previous process \(pid #{old}\) to drain/, app.output)
    assert_equal 200, FormClient.new(app).get("/posts").status, "the new process serves the same port"
  ensure
    Process.kill(:TERM, successor) if successor
  end

  def test_bundle_exec_spindle_reads_config_spindle_rb
    app = start(%w[bundle exec spindle], "-b", LOOPBACK, env: { "SPINDLE_ENGINE" => "fibers" })
    assert_match(/ engine=fibers /, app.start_line)
    assert_equal 200, FormClient.new(app).get("/posts").status
  end

  def test_a_flag_wins_over_config_spindle_rb
    app = start(nil, "-b", LOOPBACK, "--engine", "blocking", "config.ru",
                env: { "SPINDLE_ENGINE" => "fibers" })
    assert_match(/ engine=blocking /, app.start_line)
  end

  def test_a_fiber_engine_warns_when_the_isolation_level_is_thread
    %w[fibers hybrid].each do |engine|
      app = start(nil, "-b", LOOPBACK, "--engine", engine, "config.ru",
                  env: { "ISOLATION_LEVEL" => "thread" })
      warning = app.wait_for_output(/^.*isolation level is :thread.*\n/)
      assert warning, "no isolation warning on #{engine}:\n#{app.output}"
      # Issue 65, item 11: at WARN (the server serves on), as LOGGING.md says; it was an ERROR.
      assert_match(/\] WARN spindle: the #{engine} engine serves each request in its own fiber/, warning[0])
      assert_includes warning[0], "Add `config.active_support.isolation_level = :fiber` to config/application.rb"
    end
  end

  def test_the_threads_engine_does_not_warn_about_the_isolation_level
    app = start(nil, "-b", LOOPBACK, "--engine", "threads", "config.ru",
                env: { "ISOLATION_LEVEL" => "thread" })
    assert_equal 200, FormClient.new(app).get("/posts").status
    refute_match(/isolation level/, app.output)
  end

  private

  # command: nil for the clone's bin/spindle.
  def start(command, *args, env:)
    options = RailsApp.spawn_options("spindle-rails-#{name}", env)
    process = command ? CommandProcess.start(command, *args, **options) : SpindleProcess.start(*args, **options)
    @processes << process
    process
  end
end
