# frozen_string_literal: true

require "minitest/autorun"
require "tmpdir"
require "fileutils"
require_relative "../lib/bench"

# The one report writer renders a page from its JSON alone: a re-render of
# the committed hello page from its own data gives the same page and chart.
class ReportTest < Minitest::Test
  DOCS = Bench::Paths::DOCS

  def test_a_committed_grid_page_re_renders_the_same_from_its_json
    json = Bench::Report::Writer.latest("hello", DOCS) or skip "no hello data in docs/benchmarks"
    Dir.mktmpdir("bench-report") do |dir|
      FileUtils.mkdir_p(File.join(dir, "data"))
      FileUtils.cp(json, File.join(dir, "data"))
      Bench::Report::Writer.render(File.join(dir, "data", File.basename(json)))
      assert_equal File.read(File.join(DOCS, "hello.md")), File.read(File.join(dir, "hello.md"))
      assert_equal File.read(File.join(DOCS, "hello.svg")), File.read(File.join(dir, "hello.svg"))
    end
  end

  def test_every_committed_page_renders_from_its_json
    Dir.mktmpdir("bench-report") do |dir|
      FileUtils.cp_r(File.join(DOCS, "data"), dir)
      Bench::Scenario.load_all.each_key do |name|
        json = Bench::Report::Writer.latest(name, dir) or next
        Bench::Report::Writer.render(json)
        assert_match(/\A# .* — `bench\/run #{name}`/, File.read(File.join(dir, "#{name}.md")))
        assert_match(/\A<svg .*<\/svg>\n\z/m, File.read(File.join(dir, "#{name}.svg")))
      end
    end
  end
end
