# frozen_string_literal: true

require_relative "svg_chart"

# A line chart as a standalone SVG string, with no dependency beyond Ruby
# itself: the companion of SvgChart (bars) for figures over time or over a
# count (RSS over seconds, RSS over requests served). Panels stack vertically
# and share one legend; each panel has numeric x and y axes starting at 0,
# one polyline per series (with a dot per point) and optional vertical
# markers (e.g. "refork").
#
#   chart = SvgLineChart.new(title: "RSS over time", y_label: "RSS (MB)", x_label: "seconds")
#   chart.panel("plain script", series: [
#     { name: "glibc default", points: [[0, 10.2], [0.5, 80.1], ...] },
#   ], markers: [{ x: 12.0, label: "refork" }])
#   File.write("arenas.svg", chart.render)
class SvgLineChart
  PALETTE = SvgChart::PALETTE
  WIDTH = 1000
  MARGIN_LEFT = 90
  MARGIN_RIGHT = 20
  PANEL_HEIGHT = 320
  PANEL_GAP = 80
  FONT = SvgChart::FONT

  def initialize(title:, y_label:, x_label:, subtitle: nil, note: nil)
    @title = title
    @subtitle = subtitle
    @y_label = y_label
    @x_label = x_label
    @note = note
    @panels = []
  end

  # series: [{ name:, points: [[x, y], ...], color: optional, dashed: optional }]
  # x_label / y_label: per-panel overrides.
  def panel(title, series:, markers: [], x_label: nil, y_label: nil)
    @panels << { title: title, series: series, markers: markers, x_label: x_label || @x_label,
                 y_label: y_label || @y_label }
    self
  end

  def render
    names = @panels.flat_map { |p| p[:series].map { |s| s[:name] } }.uniq
    @colors = names.each_with_index.to_h { |name, i| [name, PALETTE[i % PALETTE.size]] }
    @dashed = {}
    @panels.each do |p|
      p[:series].each do |s|
        @colors[s[:name]] = s[:color] if s[:color]
        @dashed[s[:name]] = true if s[:dashed]
      end
    end
    legend, legend_height = legend(names)
    top = 70 + legend_height
    body = @panels.each_with_index.map { |p, i| render_panel(p, top + i * (PANEL_HEIGHT + PANEL_GAP)) }
    height = top + @panels.size * (PANEL_HEIGHT + PANEL_GAP) - PANEL_GAP + 30
    [header(height), legend, *body, "</svg>\n"].join("\n")
  end

  private

  def esc(text) = text.to_s.gsub("&", "&amp;").gsub("<", "&lt;").gsub(">", "&gt;").gsub('"', "&quot;")

  def header(height)
    lines = [%(<svg xmlns="http://www.w3.org/2000/svg" width="#{WIDTH}" height="#{height}" viewBox="0 0 #{WIDTH} #{height}">),
             %(<rect width="100%" height="100%" fill="white"/>),
             %(<text x="#{WIDTH / 2}" y="26" text-anchor="middle" font-size="18" font-weight="bold" #{FONT}>#{esc(@title)}</text>)]
    lines << %(<text x="#{WIDTH / 2}" y="46" text-anchor="middle" font-size="12" fill="#555" #{FONT}>#{esc(@subtitle)}</text>) if @subtitle
    lines << %(<text x="#{WIDTH / 2}" y="#{height - 8}" text-anchor="middle" font-size="11" fill="#555" #{FONT}>#{esc(@note)}</text>) if @note
    lines.join("\n")
  end

  def legend(names)
    x = MARGIN_LEFT
    y = 62
    items = names.map do |name|
      width = 46 + name.size * 7
      if x + width > WIDTH - MARGIN_RIGHT
        x = MARGIN_LEFT
        y += 18
      end
      dash = @dashed[name] ? %( stroke-dasharray="6 3") : ""
      item = %(<line x1="#{x}" y1="#{y}" x2="#{x + 20}" y2="#{y}" stroke="#{@colors[name]}" stroke-width="3"#{dash}/>) +
             %(<text x="#{x + 26}" y="#{y + 4}" font-size="12" #{FONT}>#{esc(name)}</text>)
      x += width
      item
    end
    [items.join("\n"), y - 62 + 18]
  end

  def render_panel(panel, top)
    points = panel[:series].flat_map { |s| s[:points] }
    x_max = [points.map(&:first).max.to_f, *panel[:markers].map { |m| m[:x].to_f }].max
    y_max = points.map(&:last).max.to_f
    x_ticks = SvgChart.ticks(x_max)
    y_ticks = SvgChart.ticks(y_max)
    left = MARGIN_LEFT
    right = WIDTH - MARGIN_RIGHT
    plot_top = top + 24
    bottom = top + PANEL_HEIGHT - 40
    sx = ->(v) { left + (right - left) * v.to_f / x_ticks.last }
    sy = ->(v) { bottom - (bottom - plot_top) * v.to_f / y_ticks.last }
    out = [%(<text x="#{left}" y="#{top + 12}" font-size="14" font-weight="bold" #{FONT}>#{esc(panel[:title])}</text>)]
    y_ticks.each do |t|
      out << %(<line x1="#{left}" y1="#{sy.call(t).round(1)}" x2="#{right}" y2="#{sy.call(t).round(1)}" stroke="#e5e5e5"/>)
      out << %(<text x="#{left - 6}" y="#{sy.call(t).round(1) + 4}" text-anchor="end" font-size="11" #{FONT}>#{SvgChart.short(t)}</text>)
    end
    x_ticks.each do |t|
      out << %(<line x1="#{sx.call(t).round(1)}" y1="#{bottom}" x2="#{sx.call(t).round(1)}" y2="#{bottom + 4}" stroke="#333"/>)
      out << %(<text x="#{sx.call(t).round(1)}" y="#{bottom + 17}" text-anchor="middle" font-size="11" #{FONT}>#{SvgChart.short(t)}</text>)
    end
    out << %(<line x1="#{left}" y1="#{bottom}" x2="#{right}" y2="#{bottom}" stroke="#333"/>)
    out << %(<line x1="#{left}" y1="#{plot_top}" x2="#{left}" y2="#{bottom}" stroke="#333"/>)
    out << %(<text x="#{(left + right) / 2}" y="#{bottom + 34}" text-anchor="middle" font-size="12" #{FONT}>#{esc(panel[:x_label])}</text>)
    out << %(<text x="18" y="#{(plot_top + bottom) / 2}" text-anchor="middle" font-size="12" transform="rotate(-90 18 #{(plot_top + bottom) / 2})" #{FONT}>#{esc(panel[:y_label])}</text>)
    panel[:markers].each do |m|
      x = sx.call(m[:x]).round(1)
      out << %(<line x1="#{x}" y1="#{plot_top}" x2="#{x}" y2="#{bottom}" stroke="#999" stroke-dasharray="4 3"/>)
      out << %(<text x="#{x + 3}" y="#{plot_top + 10}" font-size="11" fill="#555" #{FONT}>#{esc(m[:label])}</text>)
    end
    panel[:series].each do |s|
      next if s[:points].empty?

      color = @colors[s[:name]]
      coords = s[:points].map { |x, y| "#{sx.call(x).round(1)},#{sy.call(y).round(1)}" }
      dash = s[:dashed] ? %( stroke-dasharray="6 3") : ""
      out << %(<polyline fill="none" stroke="#{color}" stroke-width="2"#{dash} points="#{coords.join(' ')}"><title>#{esc(s[:name])}</title></polyline>)
      if s[:points].size <= 80
        s[:points].each { |x, y| out << %(<circle cx="#{sx.call(x).round(1)}" cy="#{sy.call(y).round(1)}" r="2.5" fill="#{color}"/>) }
      end
    end
    out.join("\n")
  end
end
