# frozen_string_literal: true

require "digest"
require "fileutils"
require "rbconfig"
require_relative "native"

module Spindle
  # What bin/spindle and bin/test do before anything else on a fresh checkout:
  # install the gems the Gemfile names and compile the C extension when it is
  # missing or older than its sources. Uses only the standard library, since it
  # runs before Bundler has installed anything.
  #
  # A checkout the user cannot write (a root-owned clone run as an app user)
  # works when everything is already installed and built: nothing is written
  # then. When something is missing and cannot be written, one line says what
  # and where, and the exit status is 2 (a start-up failure, as in bin/spindle).
  module Bootstrap
    # Errors that mean "this user may not write here".
    NOT_WRITABLE = [Errno::EACCES, Errno::EPERM, Errno::EROFS].freeze

    module_function

    # What the stamp of our own bundle watches.
    OWN_FILES = %w[Gemfile Gemfile.lock spindle-server.gemspec].map { |f| File.join(Native::ROOT, f) }.freeze

    # gemfile: one AppBundle wrote to serve an app under the app's gems; when
    # nil, the one BUNDLE_GEMFILE names (bin/test-ruby3.3 names its own), else
    # this checkout's. watched: the files whose change means "check the bundle
    # again"; stamp: where the last successful check is remembered. Both
    # default to the chosen Gemfile's own.
    def run!(groups: [], gemfile: nil, watched: nil, stamp: nil)
      ENV["BUNDLE_GEMFILE"] = gemfile if gemfile
      ENV["BUNDLE_GEMFILE"] ||= OWN_FILES.first
      chosen = File.expand_path(ENV["BUNDLE_GEMFILE"])
      install_gems(groups, watched || watched_for(chosen), stamp || stamp_for(chosen, groups))
      build_extension
    end

    # Another Gemfile is checked again when it or its lock changes, not only
    # when ours does (a stamp of ours skipped the check of any other Gemfile).
    def watched_for(gemfile)
      gemfile == OWN_FILES.first ? OWN_FILES : [*OWN_FILES, gemfile, "#{gemfile}.lock"]
    end

    # Ours keeps its name (bin/test-ruby3.3 finds stale stamps by it); another
    # Gemfile's is named after its path. The platform tells apart two Rubies
    # of one version, as it does for the extension's build directory
    # (Native.build_dir): bench/run's Ruby 3.3 with YJIT (x86_64-linux) and
    # Debian's ruby3.3 (x86_64-linux-gnu) install gems of their own, and one's
    # stamp must not skip the other's `bundle check`.
    def stamp_for(gemfile, groups)
      name = "bundle-ok-#{RUBY_VERSION}-#{RUBY_PLATFORM}-#{groups.join('-')}"
      name += "-#{Digest::SHA256.hexdigest(gemfile)[0, 12]}" unless gemfile == OWN_FILES.first
      File.join(Native::ROOT, "tmp", name)
    end

    # Names the Gemfile whose gems could not be installed: an app's own, not
    # the bundle Spindle wrote to serve it under them (bin/spindle run in a
    # directory below someone else's Gemfile took that one).
    def install_failed(gemfile)
      message = "`bundle install` for #{gemfile} failed (Bundler's message is above)"
      return message if gemfile == OWN_FILES.first

      "#{message}; to serve with Spindle's own gems instead, set BUNDLE_GEMFILE=#{OWN_FILES.first}"
    end

    def install_gems(groups, watched, stamp)
      return if fresh?(stamp, watched)

      env = groups.empty? ? {} : { "BUNDLE_WITH" => groups.join(":") }
      unless system(env, "bundle", "check", out: File::NULL, err: File::NULL)
        warn "spindle: installing gems (first run)..."
        system(env, "bundle", "install", "--quiet") or
          give_up(install_failed((watched - OWN_FILES).first || ENV.fetch("BUNDLE_GEMFILE")))
      end
      touch_stamp(stamp)
    end

    # The stamp only saves the next start a `bundle check`: a user who may not
    # write tmp/ goes without it.
    def touch_stamp(stamp)
      FileUtils.mkdir_p(File.dirname(stamp))
      FileUtils.touch(stamp)
    rescue *NOT_WRITABLE
      nil
    end

    # True when stamp is newer than every one of files (absolute paths): nothing
    # changed since the last successful check, so the slow `bundle check` is skipped.
    def fresh?(stamp, files)
      return false unless File.exist?(stamp)

      files.select { |f| File.exist?(f) }.all? { |f| File.mtime(f) <= File.mtime(stamp) }
    end

    # Several servers may start at once (the test suite does): the lock makes
    # one of them build while the others wait, then find the build fresh. A
    # user who may not write the build directory still takes the lock (flock
    # needs no write access), so it waits for a build in progress too.
    def build_extension
      dir = Native.build_dir
      lock, writable = open_lock(dir)
      lock&.flock(File::LOCK_EX)
      return if extension_fresh?(dir)

      give_up("the C extension is missing or older than its sources, and #{user} cannot write #{dir} " \
              "to build it: run bin/build-ext once as its owner") unless writable
      compile(dir)
    ensure
      lock&.close
    end

    # The lock file, and whether this user can write the build directory. The
    # lock is nil when it cannot even be read (no build ever ran here).
    def open_lock(dir)
      FileUtils.mkdir_p(dir)
      [File.open(File.join(dir, ".lock"), File::RDWR | File::CREAT), true]
    rescue *NOT_WRITABLE
      [read_only_lock(dir), false]
    end

    def read_only_lock(dir)
      File.open(File.join(dir, ".lock"), File::RDONLY)
    rescue SystemCallError
      nil
    end

    def user
      require "etc"
      "user #{Etc.getpwuid(Process.euid)&.name || Process.euid}"
    rescue ArgumentError
      "uid #{Process.euid}"
    end

    def give_up(message)
      warn "spindle: #{message}"
      exit 2
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
      give_up("compiling the C extension failed (log: #{log})")
    end
  end
end
