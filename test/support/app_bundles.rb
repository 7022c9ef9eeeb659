# frozen_string_literal: true

require_relative "../../lib/spindle/boot/bootstrap"
require_relative "../../tools/system_packages"

# Installs the bundles of the apps in test/apps/ (a Sinatra app, a Rails 7.2
# and a Rails 8 app, each with its own Gemfile and lock), so a fresh machine
# can run their tests. bin/test calls it before the suite. Like Bootstrap, it
# leaves a stamp per app and Ruby: a second run with nothing changed skips
# even `bundle check`.
module AppBundles
  APPS = File.join(Spindle::Native::ROOT, "test", "apps")
  # What the apps' gems compile against, beyond Spindle's own needs: psych
  # (Rails needs it through irb and rdoc) builds on libyaml's headers.
  BUILD_PACKAGES = { "/usr/include/yaml.h" => "libyaml-dev" }.freeze
  # Apps that need a newer Ruby than the machine's: Rails 8 needs 3.2, so
  # test/apps/rails8 is bundled on the 3.3 and 3.4 lanes only (its tests skip
  # on 3.1, saying so).
  MINIMUM_RUBY = { "rails8" => "3.2" }.freeze

  module_function

  def install!
    Spindle::SystemPackages.ensure!(BUILD_PACKAGES)
    Dir[File.join(APPS, "*", "Gemfile")].sort.each do |gemfile|
      dir = File.dirname(gemfile)
      install(dir) if runs_here?(File.basename(dir))
    end
  end

  def runs_here?(app)
    Gem::Version.new(RUBY_VERSION) >= Gem::Version.new(MINIMUM_RUBY.fetch(app, "0"))
  end

  def install(dir)
    name = File.basename(dir)
    stamp = File.join(Spindle::Native::ROOT, "tmp", "bundle-ok-#{RUBY_VERSION}-app-#{name}")
    gemfile = File.join(dir, "Gemfile")
    return if Spindle::Bootstrap.fresh?(stamp, [*Spindle::Bootstrap::OWN_FILES, gemfile, "#{gemfile}.lock"])

    env = environment(dir)
    unless system(env, "bundle", "check", chdir: dir, out: File::NULL, err: File::NULL)
      warn "bin/test: installing the gems of test/apps/#{name} (first run takes minutes)..."
      system(env, "bundle", "install", "--quiet", chdir: dir) or
        abort "bin/test: `bundle install` failed in test/apps/#{name} (its message is above)"
    end
    Spindle::Bootstrap.touch_stamp(stamp)
  end

  # The app's own bundle, not Spindle's: bin/test has set BUNDLE_GEMFILE and
  # BUNDLE_WITH (Spindle's optional test group) for itself.
  def environment(dir)
    { "BUNDLE_GEMFILE" => File.join(dir, "Gemfile"), "BUNDLE_WITH" => nil }
  end
end
