# frozen_string_literal: true

require_relative "lib/spindle/version"

Gem::Specification.new do |spec|
  spec.name = "spindle-server"
  spec.version = Spindle::VERSION
  spec.summary = "A Rack server with pluggable concurrency: blocking, threads, fibers, hybrid."
  spec.authors = ["Spindle contributors"]
  spec.license = "MIT"
  spec.required_ruby_version = ">= 3.1"

  spec.files = Dir["lib/**/*.rb", "ext/**/*.{c,h,rb}", "bin/spindle", "README.md", "docs/*.md"]
  spec.bindir = "bin"
  spec.executables = ["spindle"]
  spec.extensions = ["ext/spindle/extconf.rb"]

  # rack: the interface we serve. nio4r: the epoll reactor behind the threads engine.
  spec.add_dependency "rack", ">= 2.2", "< 4"
  spec.add_dependency "nio4r", "~> 2.7"
  # async: the Fiber::Scheduler behind the fibers and hybrid engines, loaded only
  # when one of them is picked.
  spec.add_dependency "async", ">= 2.8"
end
