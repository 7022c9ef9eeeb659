# frozen_string_literal: true

require "tmpdir"
require_relative "../support/spindle_process"
require_relative "../support/metrics_scraper"

# The access log on a disk that fills up: lines that cannot be written are
# dropped but counted in the metrics, the server log says so (once: its next
# line would come a minute later, past this test's phase timeout), and once
# there is room again the lines are written, whole, and the server log says
# how many were dropped. The disk is a small tmpfs the test mounts (root only).
class AccessLogFullDiskTest < SpindleIntegrationTest
  include MetricsScraper

  SIZE = "256k"
  FULL = 60 # requests sent while the disk is full
  # A whole combined line, as the test's requests make it.
  LINE = %r{\A127\.0\.0\.1 - - \[[^\]]+\] "GET /(?:before|full|freed)-\d+ HTTP/1\.1" 200 \d+ "-" "-" "-" [\d.]+ [\d.]+\n\z}

  def setup
    skip "mounting a tmpfs needs root" unless Process.uid.zero?
    @dir = Dir.mktmpdir("spindle-full-disk")
    system("mount", "-t", "tmpfs", "-o", "size=#{SIZE}", "tmpfs", @dir, exception: true)
    @mounted = true
  end

  # The servers hold the log open: they go first, or the mount is busy.
  def teardown
    @processes.each(&:kill!)
    system("umount", @dir, exception: true) if @mounted
    FileUtils.rm_rf(@dir) if @dir
  end

  def test_a_full_disk_drops_access_lines_with_an_error_and_a_count_then_recovers
    assert_full_disk_reported_and_recovered(%w[--engine threads], workers: 1)
  end

  def test_in_a_cluster_each_worker_counts_and_reports_its_drops
    assert_full_disk_reported_and_recovered(%w[-w 2], workers: 2)
  end

  private

  def assert_full_disk_reported_and_recovered(flags, workers:)
    access = File.join(@dir, "access.log")
    process = spawn_server(*flags, "-b", LOOPBACK, "--metrics", "tcp://127.0.0.1:0", "--access-log", access,
                           app_path("cluster"))
    serve(process, "before", 5)
    wait_until("the first lines written") { File.read(access).lines.size == 5 }
    filler = fill(@dir)

    serve(process, "full", FULL)
    dropped = nil
    wait_until("every request either logged or counted as dropped") do
      dropped = dropped_lines(process, workers)
      File.read(access).lines.grep(%r{ "GET /full-}).count { |line| LINE.match?(line) } + dropped == FULL
    end
    assert_operator dropped, :>, 0, "the disk was full: lines must have been dropped"
    errors = process.output.scan(/ERROR spindle: access log #{Regexp.escape(access)}: cannot write \(No space left on device\): line dropped$/)
    assert_includes 1..workers, errors.size, "one error per process that dropped lines:\n#{process.output}"

    File.delete(filler)
    # Each process says so at its next line; in a cluster, the requests may
    # all land on one worker (as 5 of them did on Ruby 3.4): so they go on,
    # one at a time, until every dropped line is accounted for again.
    freed = 0
    wait_until("every process that dropped lines saying it writes again") do
      serve(process, "freed", 1)
      freed += 1
      recovered(process, access) >= dropped
    end
    assert_equal dropped, recovered(process, access), process.output
    wait_until("the lines written again") { File.read(access).lines.grep(%r{ "GET /freed-}).size == freed }
    torn = File.read(access).lines.grep_v(LINE)
    assert_operator torn.size, :<=, workers, "only a line cut off by the full disk may be broken, each on its own line:\n#{torn.join}"
    assert_equal 0, scrape(process).sum("spindle_log_lines_dropped_total") - dropped, "no server-log line dropped"
  end

  # The lines dropped, as the "written again" lines count them.
  def recovered(process, access)
    process.output.scan(/WARN spindle: access log #{Regexp.escape(access)}: written again, after (\d+) dropped line\(s\)$/)
           .sum { |(count)| Integer(count) }
  end

  # The requests, one connection each, so a cluster spreads them.
  def serve(process, name, count)
    count.times do |i|
      assert_equal 200, roundtrip(request("GET", "/#{name}-#{i}", [["Connection", "close"]]), process).status
    end
  end

  # Fills the file system up; returns the filler's path.
  def fill(dir)
    path = File.join(dir, "filler")
    File.open(path, "wb") do |file|
      loop { file.write("\0" * 4096) }
    rescue Errno::ENOSPC
      nil
    end
    path
  end

  def dropped_lines(process, workers)
    scrape = scrape(process)
    Array.new(workers) { |i| scrape["spindle_log_lines_dropped_total", worker: i, log: "access"].to_i }.sum
  end
end
