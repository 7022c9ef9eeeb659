# frozen_string_literal: true

module Spindle
  # Installs Debian packages that tests and benchmarks need (the server itself
  # needs none). A fresh machine has only Ruby, so bin/test installs what its
  # tests use rather than skipping them. It is the repository's tooling, not
  # the server's: it lives outside lib/, so the gem does not ship it, and it
  # needs nothing but Ruby, since bin/test loads it before any gem is installed.
  module SystemPackages
    module_function

    # needs: { "/usr/bin/chromium" => "chromium", ... }; a path may be a glob.
    def ensure!(needs)
      missing = needs.reject { |path, _| Dir.glob(path).any? { |f| File.exist?(f) } }.values.uniq
      return if missing.empty?

      unless Process.uid.zero? && File.executable?("/usr/bin/apt-get")
        abort "missing packages: #{missing.join(' ')} (install them with apt-get, or run as root)"
      end
      warn "installing #{missing.join(' ')} (first run)..."
      apt("update", "-qq")
      apt("install", "-y", "-qq", "--no-install-recommends", *missing)
    end

    def apt(*args)
      env = { "DEBIAN_FRONTEND" => "noninteractive" }
      return if system(env, "apt-get", *args, out: File::NULL)

      abort "apt-get #{args.first} failed"
    end
  end
end
