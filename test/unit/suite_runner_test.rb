# frozen_string_literal: true

require "test_helper"
require "tmpdir"
require "stringio"
require_relative "../support/suite_runner"

# bin/test's runner of the whole suite: real child Rubies running small test
# files written here, one of them failing.
class SuiteRunnerTest < Minitest::Test
  LOADER = "files = ARGV.shift(Integer(ARGV.shift)); files.each { |f| require File.expand_path(f) }"

  def setup
    @dir = Dir.mktmpdir("suite-runner-test")
  end

  def teardown
    FileUtils.rm_rf(@dir)
  end

  def test_a_failing_file_fails_the_run_and_its_output_is_printed
    passing = test_file("integration", "good", "assert true")
    failing = test_file("integration", "bad", "assert_equal 1, 2")
    passed, out = run_suite([passing, failing], jobs: 2)
    refute passed
    assert_match(/^  FAIL .*bad_test\.rb  \(1 runs, 0 skips\)$/, out)
    assert_match(/^    \| Expected: 1$/, out)
    assert_match(/^  ok .*good_test\.rb/, out)
    assert_match(/^bin\/test: 2 runs, 2 assertions, 1 failures, 0 errors, 0 skips in \d+ s/, out)
    assert_match(/^bin\/test: failed: .*bad_test\.rb; alone: bin\/test .*bad_test\.rb$/, out)
  end

  def test_a_file_that_dies_before_its_summary_fails_the_run
    dying = File.join(@dir, "test", "integration", "dies_test.rb")
    FileUtils.mkdir_p(File.dirname(dying))
    File.write(dying, "raise 'not loadable'\n")
    passed, out = run_suite([dying], jobs: 1)
    refute passed
    assert_match(/^  FAIL .*dies_test\.rb  \(no summary\)$/, out)
    assert_match(/not loadable/, out)
  end

  # The child hangs for good; the deadline, not its end, stops it.
  def test_a_file_past_its_deadline_is_stopped_and_fails_the_run
    hanging = test_file("integration", "hangs", "sleep")
    passed, out = run_suite([hanging], jobs: 1, deadline: 1)
    refute passed
    assert_match(/^  FAIL .*hangs_test\.rb  \(no summary\)$/, out)
    assert_match(/^    \| bin\/test: stopped after 1 s$/, out)
  end

  def test_slow_kinds_start_first_and_unit_files_share_one_process
    files = [test_file("unit", "u1", "assert true"), test_file("unit", "u2", "assert true"),
             test_file("integration", "i", "assert true"), test_file("topology", "t", "assert true")]
    passed, out = run_suite(files, jobs: 1)
    assert passed, out
    order = out.scan(/^  ok +[\d.]+ s  (.+?)  \(\d+ runs/).flatten
    assert_equal 3, order.size, out
    assert_match(/topology/, order[0])
    assert_match(/integration/, order[1])
    assert_equal "test/unit (2 files)", order[2]
    assert_match(/^bin\/test: 4 runs, 4 assertions, 0 failures, 0 errors, 0 skips/, out)
  end

  private

  def test_file(kind, name, body)
    path = File.join(@dir, "test", kind, "#{name}_test.rb")
    FileUtils.mkdir_p(File.dirname(path))
    File.write(path, <<~RUBY)
      require "minitest/autorun"
      class #{name.capitalize}Test < Minitest::Test
        def test_it = #{body}
      end
    RUBY
    path
  end

  def run_suite(files, jobs:, **options)
    out = StringIO.new
    stdout = $stdout
    $stdout = out
    passed = SuiteRunner.new(files, jobs: jobs, ruby_args: ["-e", LOADER], **options).run
    [passed, out.string]
  ensure
    $stdout = stdout
  end
end
