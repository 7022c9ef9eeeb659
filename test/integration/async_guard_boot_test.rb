# frozen_string_literal: true

require_relative "../support/spindle_process"

# Issue #13: on Ruby 3.1 a bundle with async 2.24.0 crashed the fibers and
# hybrid engines at their first wait (NoMethodError: IO#timeout, from inside
# async); in a cluster every worker failed, again and again. Now the server
# refuses to start, with one line naming the Gemfile pin.
class AsyncGuardBootTest < Minitest::Test
  PRETEND = File.expand_path("../support/async_reports_2_24.rb", __dir__)
  LINE = 'spindle: async 2.24.0 needs Ruby 3.2 (it calls IO#timeout) and this is Ruby ' \
         "#{RUBY_VERSION}: add gem \"async\", \"< 2.24\" to your Gemfile and run bundle update async".freeze

  def setup
    skip "async 2.24.0 works on Ruby #{RUBY_VERSION}" if RUBY_VERSION >= "3.2"
  end

  [%w[fibers], %w[hybrid], %w[fibers -w 2], %w[hybrid -w 2]].each do |engine, *cluster|
    define_method(:"test_#{engine}#{cluster.empty? ? '' : '_cluster'}_refuses_async_2_24_on_ruby_3_1") do
      process = SpindleProcess.run("--engine", engine, *cluster, "-b", "tcp://127.0.0.1:0",
                                   env: { "RUBYOPT" => "#{ENV['RUBYOPT']} -r#{PRETEND}" })
      assert_equal 2, process.status&.exitstatus, process.output
      assert_equal [LINE], process.output.lines.map(&:chomp)
    end
  end
end
