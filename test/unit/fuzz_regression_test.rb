# frozen_string_literal: true

require_relative "../test_helper"
require "fileutils"
require "open3"

# Every input the fuzzer (bin/fuzz, docs/FUZZING.md) ever broke an invariant
# with stays here for good: the raw input in fuzz/regressions/, replayed
# through the same invariant checks (fuzz/harness.c, compiled with the system
# C compiler and the sanitizers when it has them, no libFuzzer needed) with
# every split offset; and, where the bug shows through the Ruby API, the
# minimal bytes as a vector below. The committed seed corpus is replayed too.
class FuzzRegressionTest < Minitest::Test
  include ParserHelpers

  ROOT = File.expand_path("../..", __dir__)
  SOURCES = %w[fuzz/harness.c fuzz/replay.c ext/spindle/http_parser.c ext/spindle/http_parser.h]
            .map { |f| File.join(ROOT, f) }.freeze

  # Reported parser bugs not fixed yet: file or test => what is wrong. Each is
  # still checked; it skips while it fails and fails once it passes, so that
  # the entry is removed when the parser is fixed.
  KNOWN_OPEN = {}.freeze

  def self.replayer
    @replayer ||= build_replayer
  end

  # Compiles harness.c + replay.c + the parser into tmp/fuzz/, with ASan and
  # UBSan when the compiler can link them. The name carries the compiler's
  # version: the Ruby 3.3 lane (bin/test-ruby3.3) shares this checkout from a
  # newer Debian, whose build would not run here (a newer glibc), nor ours there.
  def self.build_replayer
    version, = Open3.capture2e("cc", "-dumpfullversion")
    exe = File.join(ROOT, "tmp", "fuzz", "replay-cc#{version.strip}")
    return exe if File.exist?(exe) && SOURCES.all? { |f| File.mtime(f) <= File.mtime(exe) }

    FileUtils.mkdir_p(File.dirname(exe))
    base = ["cc", "-std=c99", "-g", "-O1", "-DSP_FUZZ_NO_MAIN", "-I#{ROOT}/ext/spindle",
            *SOURCES.grep(/\.c\z/), "-o", exe]
    sanitized = base + %w[-fsanitize=address,undefined -fno-sanitize-recover=all]
    _, ok = Open3.capture2e(*sanitized)
    unless ok.success?
      out, ok = Open3.capture2e(*base)
      raise "cannot build the fuzz replayer:\n#{out}" unless ok.success?
    end
    exe
  end

  def replay(*args)
    out, status = Open3.capture2e({ "UBSAN_OPTIONS" => "halt_on_error=1" }, self.class.replayer, *args)
    [status.success?, out]
  end

  def known_open(name)
    reason = KNOWN_OPEN.fetch(name)
    begin
      yield
    rescue Minitest::Assertion
      skip "known parser bug, reported: #{reason}"
    end
    flunk "#{name} passes now: the parser bug is fixed, remove it from KNOWN_OPEN"
  end

  def test_seed_corpus_keeps_every_invariant
    seeds = Dir[File.join(ROOT, "fuzz", "seeds", "*")].sort
    refute_empty seeds
    ok, out = replay(*seeds)
    assert ok, out
  end

  Dir[File.join(ROOT, "fuzz", "regressions", "*")].sort.each do |path|
    name = File.basename(path)
    define_method("test_regression_#{name}") do
      check = -> { ok, out = replay("--every-split", path); assert ok, out }
      KNOWN_OPEN.key?(name) ? known_open(name, &check) : check.call
    end
  end

  # The vectors behind the files above, through the Ruby API. Both were one
  # bug (fixed in 685f293): CR and LF were not counted against max_head.

  # Empty lines before the request line were buffered without bound.
  def test_empty_lines_before_the_request_line_are_bounded
    assert_refused("\r\n".b * 100, 431, max_head: 64)
  end

  # The last CRLF and the blank line were not counted: heads up to max_head + 4 got in.
  def test_line_ends_count_against_max_head
    head = "GET / HTTP/1.1\r\nHost: a\r\nX: #{'v' * 33}\r\n\r\n".b # 65 bytes
    assert_refused(head, 431, max_head: 64)
    assert_accepted(head.sub("v\r\n", "\r\n"), max_head: 64)
  end
end
