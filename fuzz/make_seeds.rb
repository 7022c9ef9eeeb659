# frozen_string_literal: true

# Writes the committed seed corpus (fuzz/seeds/) from the parser's own test
# vectors: test/unit/parser_bad_inputs_test.rb and parser_valid_test.rb are
# loaded, every test is run once, and every byte string they hand to the
# parser is recorded. Each becomes a libFuzzer input (harness.c explains the
# three control bytes in front): once with default limits, once with the
# harness's small limits, and valid requests also as pipelined pairs.
#
#   ruby fuzz/make_seeds.rb        (bin/fuzz --seeds runs it)
require "digest"
require "fileutils"
require "minitest"

# Load the tests without letting minitest/autorun run them at exit.
$LOADED_FEATURES << $LOAD_PATH.resolve_feature_path("minitest/autorun").last

ROOT = File.expand_path("..", __dir__)
$LOAD_PATH.unshift(File.join(ROOT, "lib"), File.join(ROOT, "test"))
%w[parser_bad_inputs_test parser_valid_test].each { |f| require File.join(ROOT, "test/unit", f) }

# Records what each test feeds the parser, then lets the test go on.
module Recorder
  SEEN = {} # bytes => accepted?

  private

  def drive(pieces, limits)
    result = super
    bytes = pieces.join.b
    SEEN[bytes] ||= result.verdict == :ok if bytes.bytesize.between?(1, 8192)
    result
  end
end

tests = [ParserBadInputsTest, ParserValidTest]
tests.each { |klass| klass.prepend(Recorder) }
tests.each do |klass|
  klass.public_instance_methods(true).grep(/\Atest_/).sort.each do |name|
    klass.new(name).run
  end
end

dir = File.join(ROOT, "fuzz", "seeds")
FileUtils.rm_rf(dir)
FileUtils.mkdir_p(dir)
write = lambda do |flags, bytes|
  split = bytes.bytesize / 2
  input = [flags, split & 0xff, split >> 8].pack("C3") + bytes
  File.binwrite(File.join(dir, Digest::SHA1.hexdigest(input)), input)
end
Recorder::SEEN.each_key do |bytes|
  write.call(0, bytes)
  write.call(1, bytes)
end
valid = Recorder::SEEN.select { |_, ok| ok }.keys.select { |b| b.bytesize < 300 }
valid.each_slice(2) { |a, b| write.call(0, a + b.to_s) }
puts "fuzz/seeds: #{Dir.children(dir).size} inputs from #{Recorder::SEEN.size} test vectors"
