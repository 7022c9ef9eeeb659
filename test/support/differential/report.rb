# frozen_string_literal: true

# Prints the differential run: corpus size, agreements, and every disagreement
# grouped by the row of DifferentialTest::EXPLAINED it matched (or UNEXPLAINED).
#   ruby -Ilib -Itest test/support/differential/report.rb [--all]
require "minitest"
$LOADED_FEATURES << $LOAD_PATH.resolve_feature_path("minitest/autorun").last # load the test, run nothing
require_relative "../../unit/differential_test"

run = Differential::Run.new(explanations: DifferentialTest::EXPLAINED)
puts run.summary
run.disagreements.group_by { |d| run.explanation(d)&.reason || "UNEXPLAINED" }.each do |reason, list|
  puts "\n#{list.size} x #{reason}"
  list.first(ARGV.include?("--all") ? list.size : 2).each do |d|
    puts "  [#{d.kind} @#{d.index}] #{d.label}: #{d.bytes.inspect[0, 160]}"
    puts "    spindle: #{d.spindle.describe[0, 160]}"
    puts "    llhttp:  #{d.oracle.describe[0, 160]}"
  end
end
