# frozen_string_literal: true

require_relative "lib/spindle/version"

# The gem is spindle-server: "spindle" on RubyGems is an unrelated gem. The
# executable is still `spindle`, and the code is still the Spindle module.
Gem::Specification.new do |spec|
  spec.name = "spindle-server"
  spec.version = Spindle::VERSION
  spec.summary = "A Rack server with pluggable concurrency: blocking, threads, fibers, hybrid."
  spec.description = <<~TEXT.tr("\n", " ").strip
    Spindle serves Rack apps (Rails, Sinatra, any config.ru) with the concurrency
    model you pick by flag: one request at a time, a thread pool behind an epoll
    reactor, a fiber per connection, or threads of fiber loops, in one process or
    a preforking cluster with hot restarts and reforking. Its HTTP/1.1 parser is
    strict and written in C.
  TEXT
  spec.authors = ["Spindle contributors"]
  spec.license = "MIT"
  # No public source repository yet: the gem's own page is its home.
  spec.homepage = "https://rubygems.org/gems/spindle-server"
  spec.metadata = {
    "documentation_uri" => "https://rubygems.org/gems/spindle-server",
    "rubygems_mfa_required" => "true",
  }
  spec.required_ruby_version = ">= 3.1"

  # lib/ holds the demo app (lib/spindle/demo/config.ru) and both rackup
  # handlers; no Gemfile: an installed gem never bundles itself.
  spec.files = Dir["lib/**/*", "ext/spindle/*.{c,h,rb}", "bin/spindle", "bin/spindlectl",
                   "examples/**/*", "docs/**/*.md", "README.md"].select { |f| File.file?(f) }
  spec.bindir = "bin"
  spec.executables = %w[spindle spindlectl]
  # Compiled by `gem install` (and by Bundler for a released gem): the server
  # never compiles anything at start or at the first request.
  spec.extensions = ["ext/spindle/extconf.rb"]

  # rack: the interface we serve. nio4r: the epoll reactor behind the threads engine.
  spec.add_dependency "rack", ">= 2.2", "< 4"
  spec.add_dependency "nio4r", "~> 2.7"
  # async: the Fiber::Scheduler behind the fibers and hybrid engines, loaded
  # only when one of them is picked. 2.24.0 is the one release that declares
  # Ruby 3.1 support and calls IO#timeout (Ruby 3.2+); every later one requires
  # Ruby 3.2, so excluding it gives a working async on 3.1 and 3.3 alike.
  spec.add_dependency "async", "~> 2.8", "!= 2.24.0"
end
