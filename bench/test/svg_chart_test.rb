# frozen_string_literal: true

require "minitest/autorun"
require "rexml/document"
require_relative "../lib/svg_chart"

class SvgChartTest < Minitest::Test
  def test_renders_well_formed_svg_with_every_series_in_the_legend
    chart = SvgChart.new(title: "T <&>", y_label: "req/s", x_label: "c", hatch_note: "hatched")
    chart.panel("1 process", groups: %w[16 64], series: [
                  { name: "a", values: [1000, 2000], lows: [900, 1900], highs: [1100, 2100], hatched: [false, true] },
                  { name: "b", values: [nil, 500] }
                ])
    doc = REXML::Document.new(chart.render)
    texts = REXML::XPath.match(doc, "//text").map(&:text)
    assert_includes texts, "T <&>"
    assert_includes texts, "a"
    assert_includes texts, "b"
    assert_equal 1, REXML::XPath.match(doc, "//rect[@fill='url(#hatch)']").size - 1 # minus the legend sample
  end

  def test_line_panels_share_the_legend_and_draw_markers
    chart = SvgChart::Lines.new(title: "RSS", y_label: "MB", x_label: "s", note: "a note")
    chart.panel("one", series: [{ name: "a", points: [[0, 1], [2, 3]] }], markers: [{ x: 1, label: "refork" }])
    chart.panel("two", series: [{ name: "a", points: [[0, 2]] }, { name: "b", points: [], dashed: true }], y_label: "count")
    doc = REXML::Document.new(chart.render)
    texts = REXML::XPath.match(doc, "//text").map(&:text)
    assert_equal 1, texts.count("a"), "one legend entry per series name"
    assert_includes texts, "refork"
    assert_includes texts, "count"
    assert_includes texts, "a note"
    assert_equal 2, REXML::XPath.match(doc, "//polyline").size
  end

  def test_ticks_are_round_and_cover_the_maximum
    ticks = SvgChart.ticks(23_400)
    assert_operator ticks.last, :>=, 23_400
    assert_equal 5000, ticks[1] - ticks[0]
  end
end
