# frozen_string_literal: true

require "rbconfig"
require "fileutils"
require_relative "native"

module Spindle
  # What bin/spindle and bin/test do before anything else on a fresh checkout:
  # install the gems the Gemfile names and compile the C extension when it is
  # missing or older than its sources. Uses only the standard library, since it
  # runs before Bundler has installed anything.
  module Bootstrap
    module_function

    def run!(groups: [])
      ENV["BUNDLE_GEMFILE"] ||= File.join(Native::ROOT, "Gemfile")
      install_gems(groups)
      build_extension
    end

    def install_gems(groups)
      stamp = File.join(Native::ROOT, "tmp", "bundle-ok-#{RUBY_VERSION}-#{groups.join('-')}")
      return if fresh?(stamp, %w[Gemfile Gemfile.lock spindle.gemspec])

      env = groups.empty? ? {} : { "BUNDLE_WITH" => groups.join(":") }
      unless system(env, "bundle", "check", out: File::NULL, err: File::NULL)
        warn "spindle: installing gems (first run)..."
        system(env, "bundle", "install", "--quiet", exception: true)
      end
      FileUtils.mkdir_p(File.dirname(stamp))
      FileUtils.touch(stamp)
    end

    # True when stamp is newer than every one of files: nothing changed since the
    # last successful check, so the slow `bundle check` is skipped.
    def fresh?(stamp, files)
      return false unless File.exist?(stamp)

      files.map { |f| File.join(Native::ROOT, f) }.select { |f| File.exist?(f) }
           .all? { |f| File.mtime(f) <= File.mtime(stamp) }
    end

    # Several servers may start at once (the test suite does): the lock makes
    # one of them build while the others wait, then find the build fresh.
    def build_extension
      dir = Native.build_dir
      FileUtils.mkdir_p(dir)
      File.open(File.join(dir, ".lock"), File::RDWR | File::CREAT) do |lock|
        lock.flock(File::LOCK_EX)
        compile(dir) unless extension_fresh?(dir)
      end
    end

    def extension_fresh?(dir)
      so = File.join(dir, "spindle_http.#{RbConfig::CONFIG['DLEXT']}")
      sources = Dir[File.join(Native::ROOT, "ext", "spindle", "*.{c,h,rb}")]
      File.exist?(so) && sources.all? { |f| File.mtime(f) <= File.mtime(so) }
    end

    def compile(dir)
      extconf = File.join(Native::ROOT, "ext", "spindle", "extconf.rb")
      log = File.join(dir, "build.log")
      ok = system(RbConfig.ruby, extconf, chdir: dir, out: log, err: [:child, :out]) &&
           system("make", "-s", chdir: dir, out: log, err: [:child, :out])
      return if ok

      warn File.read(log)
      abort "spindle: compiling the C extension failed (log: #{log})"
    end
  end
end
