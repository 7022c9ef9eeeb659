# frozen_string_literal: true

require "bundler"
require "fileutils"
require "open3"
require "rbconfig"
require "tmpdir"
require_relative "spindle_process"

# The environment a user meets outside this checkout: none of bin/test's
# Bundler setup, and (with a gem_home) a fresh GEM_HOME in front of the
# machine's installed gems, so `gem install --local` and `bundle install
# --local` find every dependency without the network.
module GemSandbox
  # The machine's gems, as this Ruby sees them (the Ruby 3.3 lane has its own).
  MACHINE_GEM_PATH = Gem.path.freeze
  RUBYGEMS = ["-e", 'require "rubygems/gem_runner"; Gem::GemRunner.new.run(ARGV.dup)'].freeze

  module_function

  def env(gem_home: nil)
    # Not even the Gemfile a lane chose before bin/test (bin/test-ruby3.3 does).
    env = Bundler.unbundled_env.to_h.reject { |name, _| %w[BUNDLE_GEMFILE BUNDLE_WITH].include?(name) }
    return env unless gem_home

    env.merge("GEM_HOME" => gem_home, "GEM_PATH" => [gem_home, *MACHINE_GEM_PATH].join(File::PATH_SEPARATOR),
              "PATH" => "#{gem_home}/bin#{File::PATH_SEPARATOR}#{env['PATH']}")
  end

  # Runs a command to completion in the sandbox; raises with its output on failure.
  def run!(env, *command, chdir:)
    output, status = Open3.capture2e(env, *command, chdir: chdir, unsetenv_others: true)
    raise "#{command.join(' ')} failed (#{status.inspect}):\n#{output}" unless status.success?

    output
  end

  def gem!(env, *args, chdir:) = run!(env, RbConfig.ruby, *RUBYGEMS, *args, chdir: chdir)

  def bundle_command = [RbConfig.ruby, Gem.bin_path("bundler", "bundle")]

  def bundle!(env, *args, chdir:) = run!(env, *bundle_command, *args, chdir: chdir)

  # An app directory: a Gemfile with these lines, a config.ru, and its lock
  # (an app has one; resolving it from the installed gems keeps the network out).
  def app(dir, gemfile_lines, config_ru, env:)
    FileUtils.mkdir_p(dir)
    File.write(File.join(dir, "Gemfile"), "#{gemfile_lines.join("\n")}\n")
    File.write(File.join(dir, "config.ru"), config_ru)
    bundle!(env, "lock", "--local", chdir: dir)
    dir
  end
end
