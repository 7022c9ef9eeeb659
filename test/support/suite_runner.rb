# frozen_string_literal: true

require "rbconfig"
require "tmpdir"
require_relative "bounded_wait"

# Runs the whole suite as several processes at once, one test file to each
# (the unit tests, which are quick, together in one), and adds up their
# results. Most integration tests wait on servers they started, so running
# SPINDLE_TEST_JOBS files at a time keeps both cores busy instead of one.
# Each file still gets a process of its own: nothing a test leaves behind
# (ENV, the current directory, signal handlers, a PostgreSQL) reaches the
# others, and ports, temporary directories and network namespaces are
# already chosen per process.
#
# A file's output is printed whole when it fails, and a file that runs past
# FILE_DEADLINE is stopped and counted as failed: a hang ends the run.
class SuiteRunner
  FILE_DEADLINE = 900 # seconds; the slowest file took 74 at 3 at a time (2026-11-29)
  SUMMARY = /(\d+) runs, (\d+) assertions, (\d+) failures, (\d+) errors, (\d+) skips/
  # The order files start in: slowest kinds first, so the run does not end
  # waiting on one long file started last; bigger files first within a kind.
  KIND_ORDER = %w[topology cluster integration contract unit].freeze
  KIND = %r{(?:\A|/)test/(#{KIND_ORDER.join("|")})/}

  Job = Struct.new(:files, :label, :alone)
  Outcome = Struct.new(:job, :status, :output, :seconds, :counts) do
    def passed? = status&.success? && counts && counts[2].zero? && counts[3].zero?
  end

  def self.jobs_wanted
    value = ENV.fetch("SPINDLE_TEST_JOBS", "")
    return Integer(value) if value.match?(/\A[1-9]\d*\z/)
    abort "bin/test: SPINDLE_TEST_JOBS must be a whole number of processes, not #{value.inspect}" unless value.empty?

    3 # measured in docs/TESTING.md: 2 cores, tests mostly waiting
  end

  # deadline: seconds a file may run (FILE_DEADLINE).
  def initialize(files, jobs:, ruby_args:, deadline: FILE_DEADLINE)
    @jobs = jobs
    @deadline = deadline
    @ruby_args = ruby_args
    @files = files.size
    @queue = plan(files)
    @lock = Mutex.new
    @outcomes = []
  end

  # Runs every job; prints a line per file and the totals. true when all passed.
  def run
    $stdout.sync = true # a line per file as it ends, in a CI log too; and nothing left unwritten at an exec
    started = now
    puts "bin/test: #{@files} files, #{@jobs} at a time " \
         "(SPINDLE_TEST_JOBS=1 runs them in one process), Ruby #{RUBY_VERSION}"
    Dir.mktmpdir("spindle-suite") do |dir|
      Array.new(@jobs) { |slot| Thread.new { work(dir, slot) } }.each(&:join)
    end
    report(now - started)
  end

  private

  def plan(files)
    unit, single = files.partition { |file| kind(file) == "unit" }
    ordered = single.sort_by { |file| [KIND_ORDER.index(kind(file)) || KIND_ORDER.size, -File.size(file), file] }
    jobs = ordered.map { |file| Job.new([file], file, file) }
    unless unit.empty?
      label = "test/unit (#{unit.size} file#{'s' unless unit.size == 1})"
      jobs << Job.new(unit, label, "test/unit/*_test.rb")
    end
    Thread::Queue.new(jobs).tap(&:close)
  end

  def kind(file) = file[KIND, 1]

  def work(dir, slot)
    while (job = @queue.pop)
      outcome = run_job(job, File.join(dir, "slot#{slot}.log"))
      @lock.synchronize do
        @outcomes << outcome
        print_outcome(outcome)
      end
    end
  end

  def run_job(job, log)
    started = now
    pid = Process.spawn(RbConfig.ruby, *@ruby_args, job.files.size.to_s, *job.files,
                        in: File::NULL, out: log, err: %i[child out])
    status = BoundedWait.wait(pid, @deadline) # nil: stopped at the deadline
    output = File.read(log)
    output += "\nbin/test: stopped after #{@deadline} s\n" unless status
    counts = output.scan(SUMMARY).last&.map(&:to_i)
    Outcome.new(job, status, output, now - started, counts)
  end

  def print_outcome(outcome)
    counts = outcome.counts ? "#{outcome.counts[0]} runs, #{outcome.counts[4]} skips" : "no summary"
    puts format("  %-4s %6.1f s  %s  (%s)", outcome.passed? ? "ok" : "FAIL", outcome.seconds, outcome.job.label, counts)
    return if outcome.passed?

    puts outcome.output.gsub(/^/, "    | ")
  end

  def report(seconds)
    totals = @outcomes.filter_map(&:counts).transpose.map(&:sum)
    totals = [0, 0, 0, 0, 0] if totals.empty?
    failed = @outcomes.reject(&:passed?)
    puts format("bin/test: %d runs, %d assertions, %d failures, %d errors, %d skips in %d s (Ruby %s)",
                *totals, seconds, RUBY_VERSION)
    failed.each { |outcome| puts "bin/test: failed: #{outcome.job.label}; alone: bin/test #{outcome.job.alone}" }
    failed.empty?
  end

  def now = Process.clock_gettime(Process::CLOCK_MONOTONIC)
end
