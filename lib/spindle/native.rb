# frozen_string_literal: true

module Spindle
  # Finds the compiled extension: built by bin/spindle or bin/test into
  # tmp/ext/<ruby ABI>/ in a checkout, or by RubyGems when installed as a gem.
  module Native
    ROOT = File.expand_path("../..", __dir__)

    def self.build_dir
      File.join(ROOT, "tmp", "ext", "#{RUBY_ENGINE}-#{RbConfig::CONFIG['ruby_version']}-#{RUBY_PLATFORM}")
    end

    def self.require_extension(name)
      local = File.join(build_dir, "#{name}.#{RbConfig::CONFIG['DLEXT']}")
      File.exist?(local) ? require(local) : require(name)
    end
  end
end
