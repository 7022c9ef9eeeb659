# frozen_string_literal: true

require "spindle/boot/app_bundle"
require_relative "../support/command_process"
require_relative "../support/gem_sandbox"

# Issue #13: this checkout's bin/spindle serving an app that has its own
# Gemfile, outside any bundle, as `puma` does. The app here needs
# websocket-driver, which Spindle's own bundle does not load; before, bin/spindle
# always ran under this checkout's Gemfile and the app failed with
# `cannot load such file -- websocket/driver` (a Sinatra app: `-- sinatra/base`).
class AppBundleTest < Minitest::Test
  ROOT = SpindleProcess::ROOT
  APP = <<~RUBY
    require "websocket/driver"
    run ->(env) { [200, { "content-type" => "text/plain" }, ["driver #{'#{WebSocket::Driver.name}'}\\n"]] }
  RUBY

  APP_WITHOUT_GEMS = %(run ->(env) { [200, { "content-type" => "text/plain" }, ["path gem\\n"]] }\n)

  def setup
    @dir = Dir.mktmpdir("spapp")
    @env = GemSandbox.env
  end

  def teardown
    @server&.kill!
    FileUtils.rm_rf(Spindle::AppBundle.new(File.join(@dir, "app", "Gemfile")).dir)
    FileUtils.rm_rf(@dir)
  end

  def test_a_clone_serves_an_app_under_the_apps_own_gemfile
    app = GemSandbox.app(File.join(@dir, "app"), ['source "https://rubygems.org"', 'gem "websocket-driver"'], APP,
                         env: @env)
    lock = File.read(File.join(app, "Gemfile.lock"))
    @server = CommandProcess.start([RbConfig.ruby, SpindleProcess::BIN], "-b", "unix://#{@dir}/s.sock",
                                   File.join(app, "config.ru"), chdir: @dir, env: @env, unsetenv_others: true)
    assert_equal "driver WebSocket::Driver\n", get(@server)
    assert_equal %w[Gemfile Gemfile.lock config.ru], Dir.children(app).sort, "nothing is written into the app"
    assert_equal lock, File.read(File.join(app, "Gemfile.lock"))
  end

  # The app is ./config.ru when none is named, and it is served on a cluster's
  # workers too (each one re-requires nothing: the bundle was set up before the fork).
  def test_the_app_in_the_current_directory_with_workers
    app = GemSandbox.app(File.join(@dir, "app"), ['source "https://rubygems.org"', 'gem "websocket-driver"'], APP,
                         env: @env)
    @server = CommandProcess.start([RbConfig.ruby, SpindleProcess::BIN], "-w", "2", "-b", "unix://#{@dir}/s.sock",
                                   chdir: app, env: @env, unsetenv_others: true)
    assert_equal "driver WebSocket::Driver\n", get(@server)
  end

  # `bundle exec /clone/bin/spindle` in an app whose Gemfile lacks Spindle
  # failed with `cannot load such file -- nio`.
  def test_bundle_exec_in_an_app_without_spindle_says_what_to_add
    app = GemSandbox.app(File.join(@dir, "app"), ['source "https://rubygems.org"', 'gem "websocket-driver"'], APP,
                         env: @env)
    process = CommandProcess.run([*GemSandbox.bundle_command, "exec", SpindleProcess::BIN], "-b", "unix://#{@dir}/s.sock",
                                 chdir: app, env: @env, unsetenv_others: true)
    assert_equal 2, process.status&.exitstatus, process.output
    assert_equal [%(spindle: #{app}/Gemfile does not include Spindle: add `gem "spindle-server", path: "#{ROOT}"` ) +
                  "to it and run bundle install (or run #{SpindleProcess::BIN} without bundle exec)"],
                 process.output.lines.map(&:chomp).grep(/\S/)
  end

  # A Gemfile BUNDLE_GEMFILE names is the user's choice: used as it is, so it
  # must name Spindle, and the same line says so.
  def test_a_bundle_gemfile_without_spindle_says_what_to_add
    app = GemSandbox.app(File.join(@dir, "app"), ['source "https://rubygems.org"', 'gem "websocket-driver"'], APP,
                         env: @env)
    process = CommandProcess.run([RbConfig.ruby, SpindleProcess::BIN], "-b", "unix://#{@dir}/s.sock",
                                 chdir: app, env: @env.merge("BUNDLE_GEMFILE" => File.join(app, "Gemfile")),
                                 unsetenv_others: true)
    assert_equal 2, process.status&.exitstatus, process.output
    assert_equal [%(spindle: #{app}/Gemfile does not include Spindle: add `gem "spindle-server", path: "#{ROOT}"` ) +
                  "to it and run bundle install (or leave BUNDLE_GEMFILE unset to serve the app under its own Gemfile)"],
                 process.output.lines.map(&:chomp).grep(/\S/)
  end

  # `gem "spindle-server", path: CLONE` and `bundle exec spindle`: Bundler never
  # compiles a path gem, so the clone's bin/spindle builds its extension into
  # the clone's tmp/ext/ (an installed gem never compiles; GemInstallTest).
  def test_bundle_exec_spindle_with_a_path_gem_on_a_clone_never_built
    clone = copy_clone
    env = GemSandbox.env(gem_home: File.join(@dir, "gems"))
    app = GemSandbox.app(File.join(@dir, "app"), ['source "https://rubygems.org"',
                                                  %(gem "spindle-server", path: "#{clone}")], APP_WITHOUT_GEMS, env: env)
    GemSandbox.bundle!(env, "install", "--local", chdir: app)
    @server = CommandProcess.start([*GemSandbox.bundle_command, "exec", "spindle"], "-b", "unix://#{@dir}/s.sock",
                                   chdir: app, env: env, unsetenv_others: true)
    assert_equal "path gem\n", get(@server)
    assert_equal 1, Dir[File.join(clone, "tmp", "ext", "*", "spindle_http.#{RbConfig::CONFIG['DLEXT']}")].size
  end

  # A path gem pointing at a clone that was never built, started by rackup:
  # the missing extension's LoadError made rackup try rack/handler/spindle and
  # report `cannot load such file -- rack/handler`.
  def test_rackup_from_a_clone_never_built_names_the_missing_extension
    clone = copy_clone
    # The Gemfile this suite runs under: on the Ruby 3.3 lane that is its own
    # (bin/test-ruby3.3), and the project's would be re-resolved for 3.3,
    # rewriting Gemfile.lock in the checkout.
    gemfile = ENV.fetch("BUNDLE_GEMFILE", File.join(ROOT, "Gemfile"))
    env = @env.merge("RUBYOPT" => "-rbundler/setup -I#{clone}/lib", "BUNDLE_GEMFILE" => gemfile, "BUNDLE_WITH" => "test")
    process = CommandProcess.run([RbConfig.ruby, Gem.bin_path("rackup", "rackup")], "-s", "spindle", "-o", "127.0.0.1",
                                 "-p", "0", File.join(ROOT, "examples", "hello", "config.ru"),
                                 chdir: @dir, env: env, unsetenv_others: true)
    # Issue 65, item 15: one line and exit status 2, not the exception's
    # backtrace and 1. (Ruby's -w warns that the clone's Spindle::VERSION
    # replaces the checkout's, which this suite's bundle loaded.)
    assert_equal 2, process.status&.exitstatus, process.output
    assert_equal ["spindle: the C extension spindle_http is not built in #{clone}: run #{clone}/bin/build-ext once " \
                  "(bin/spindle does it by itself)"],
                 process.output.lines.map(&:chomp).grep(/\S/).grep_v(/: warning: /)
  end

  # Issue 65, item 15: the same under `rails server`, whose app names the clone
  # as a path gem, was the exception with some 30 lines of Rails' frames.
  def test_rails_server_on_a_path_gem_never_built_says_so_in_one_line
    clone = copy_clone
    app = File.join(@dir, "rails")
    FileUtils.cp_r(File.join(ROOT, "test", "apps", "rails"), app)
    FileUtils.rm_rf([File.join(app, "tmp"), File.join(app, "log")])
    gemfile = File.join(app, "Gemfile")
    File.write(gemfile, File.read(gemfile).sub(%(path: "../../.."), %(path: "#{clone}")))
    GemSandbox.bundle!(@env, "install", "--local", chdir: app)
    env = @env.merge("RAILS_ENV" => "production", "SECRET_KEY_BASE" => "x" * 64)
    process = CommandProcess.run([RbConfig.ruby, "bin/rails", "server"], "-u", "spindle", "-b", "127.0.0.1", "-p", "0",
                                 chdir: app, env: env, unsetenv_others: true)
    assert_equal 2, process.status&.exitstatus, process.output
    assert_equal ["spindle: the C extension spindle_http is not built in #{clone}: run #{clone}/bin/build-ext once " \
                  "(bin/spindle does it by itself)"], process.output.lines.map(&:chomp).grep(/\S/)
  end

  private

  # A clone that was never built: no tmp/.
  def copy_clone
    clone = File.join(@dir, "clone")
    FileUtils.mkdir_p(clone)
    %w[bin lib ext Gemfile Gemfile.lock spindle-server.gemspec].each { |part| FileUtils.cp_r(File.join(ROOT, part), clone) }
    clone
  end

  def get(server)
    connection = server.connect
    connection.write(HttpClient.request("GET", "/", [["Connection", "close"]]))
    response = connection.read_response
    assert_equal 200, response.status, "#{response}\n#{server.output}"
    response.body
  ensure
    connection&.close
  end
end
