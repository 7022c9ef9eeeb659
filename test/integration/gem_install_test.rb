# frozen_string_literal: true

require_relative "../support/command_process"
require_relative "../support/gem_sandbox"

# Issue #13: the gem, as a user meets it. From an empty directory: `gem build`
# of this checkout, `gem install` into a fresh GEM_HOME (dependencies from the
# machine's installed gems, no network), then an app whose Gemfile has two
# lines serves with `bundle exec spindle` on every engine, and the installed
# `spindlectl` talks to its cluster. Before: the installed `spindle` parsed the
# gem's own Gemfile and failed; under `bundle exec` it recompiled the extension
# in the gem's directory and failed (`cannot find http_parser.o`); the gem had
# no spindlectl and no demo app.
class GemInstallTest < Minitest::Test
  APP = <<~RUBY
    run ->(env) { [200, { "content-type" => "text/plain" }, ["app served by #{'#{env["SERVER_SOFTWARE"]}'}\\n"]] }
  RUBY

  # Built and installed once for the class: the build compiles the extension.
  def self.sandbox
    @sandbox ||= build_and_install
  end

  def self.build_and_install
    dir = Dir.mktmpdir("spgem")
    Minitest.after_run { FileUtils.rm_rf(dir) }
    gem_home = File.join(dir, "gems")
    env = GemSandbox.env(gem_home: gem_home)
    package = File.join(dir, "spindle-server.gem")
    built = GemSandbox.gem!(env, "build", File.join(SpindleProcess::ROOT, "spindle-server.gemspec"), "--output", package,
                            chdir: SpindleProcess::ROOT)
    GemSandbox.gem!(env, "install", "--local", "--no-document", package, chdir: dir)
    app = GemSandbox.app(File.join(dir, "app"), ['source "https://rubygems.org"', 'gem "spindle-server"'], APP, env: env)
    { dir: dir, gem_home: gem_home, env: env, app: app, build_output: built,
      gem_dir: File.join(gem_home, "gems", "spindle-server-#{Spindle::VERSION}") }
  end

  def sandbox = self.class.sandbox

  %w[blocking threads fibers hybrid].each do |engine|
    define_method(:"test_bundle_exec_spindle_serves_an_app_on_#{engine}") do
      control = "unix://#{sandbox[:dir]}/#{engine}.ctl"
      server = CommandProcess.start([*GemSandbox.bundle_command, "exec", "spindle"], "--engine", engine, "-w", "1",
                                    "--control", control, "-b", "unix://#{sandbox[:dir]}/#{engine}.sock",
                                    chdir: sandbox[:app], env: sandbox[:env], unsetenv_others: true)
      assert_match(/ engine=#{engine} /, server.start_line)
      assert_equal "app served by Spindle/#{Spindle::VERSION}\n", get(server)
      stats = installed("spindlectl", "--control", control, "stats")
      assert_match(/workers 1\/1 +engine #{engine}/, stats)
      assert server.stop, "the server did not stop:\n#{server.output}"
    ensure
      server&.kill!
    end
  end

  # The installed gem's code and extension serve, not this checkout's, and
  # nothing is compiled or installed at start.
  def test_bundle_exec_uses_the_installed_gem_and_compiles_nothing
    path = GemSandbox.bundle!(sandbox[:env], "exec", "ruby", "-e",
                              'print Gem.loaded_specs["spindle-server"].full_gem_path', chdir: sandbox[:app])
    assert_equal sandbox[:gem_dir], path.lines.last
    server = CommandProcess.start([*GemSandbox.bundle_command, "exec", "spindle"], "-b", "unix://#{sandbox[:dir]}/c.sock",
                                  chdir: sandbox[:app], env: sandbox[:env], unsetenv_others: true)
    get(server)
    refute File.exist?(File.join(sandbox[:gem_dir], "tmp")), "the installed gem built something at start"
    refute_match(/installing|compil/i, server.output)
  ensure
    server&.kill!
  end

  # The installed executable, without Bundler and without an app: the demo app
  # packaged in the gem.
  def test_installed_spindle_serves_the_packaged_demo
    empty = Dir.mktmpdir("spdemo", sandbox[:dir])
    server = CommandProcess.start([File.join(sandbox[:gem_home], "bin", "spindle")], "-b", "unix://#{empty}/d.sock",
                                  chdir: empty, env: sandbox[:env], unsetenv_others: true)
    response = request(server)
    assert_equal 200, response.status
    refute_match(/Gemfile/, server.output)
  ensure
    server&.kill!
  end

  # `gem build` warned: no homepage, an open-ended dependency on async.
  def test_gem_build_gives_no_warning
    assert_empty sandbox[:build_output].lines.grep(/WARNING/)
  end

  def test_the_gem_ships_both_executables_the_demo_and_the_docs
    %w[bin/spindle bin/spindlectl lib/spindle/demo/config.ru lib/spindle-server.rb README.md docs/CONFIG.md
       ext/spindle/extconf.rb].each do |file|
      assert File.file?(File.join(sandbox[:gem_dir], file)), "the gem lacks #{file}"
    end
    refute File.exist?(File.join(sandbox[:gem_dir], "Gemfile")), "an installed gem must not look like a checkout"
    # The repository's own tooling (the apt-get installer of bin/test, bin/fuzz, bench/) stays in the checkout.
    refute File.exist?(File.join(sandbox[:gem_dir], "tools")), "the gem ships the repository's tools/"
    assert_empty Dir[File.join(sandbox[:gem_dir], "**", "system_packages.rb")], "the gem ships the apt-get installer"
    assert File.executable?(File.join(sandbox[:gem_home], "bin", "spindlectl"))
  end

  private

  def installed(command, *args)
    GemSandbox.run!(sandbox[:env], File.join(sandbox[:gem_home], "bin", command), *args, chdir: sandbox[:dir])
  end

  def request(server)
    connection = server.connect
    connection.write(HttpClient.request("GET", "/", [["Connection", "close"]]))
    connection.read_response
  ensure
    connection&.close
  end

  def get(server)
    response = request(server)
    assert_equal 200, response.status, response.to_s
    response.body
  end
end
