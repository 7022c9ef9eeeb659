# frozen_string_literal: true

# The harness's one chart writer: a standalone SVG string, with no dependency
# beyond Ruby itself. Panels stack vertically and share one legend (a hatch
# sample and a note below it when given). Two kinds of panel body:
#
# SvgChart (bars): groups along x (e.g. connection counts), one bar per series
# in each group, optional min/max whiskers and hatching for flagged bars.
#   chart = SvgChart.new(title: "Hello world", y_label: "requests/s", x_label: "connections")
#   chart.panel("1 process", groups: %w[16 64 256], series: [
#     { name: "puma", values: [9e3, 9.5e3, 9.1e3], lows: [...], highs: [...], hatched: [false, true, false] },
#   ])
#
# SvgChart::Lines: numeric x and y axes from 0, one polyline per series (a dot
# per point, dashed on request) and optional vertical markers ("refork").
#   chart = SvgChart::Lines.new(title: "RSS over time", y_label: "RSS (MB)", x_label: "seconds")
#   chart.panel("plain script", series: [{ name: "glibc", points: [[0, 10.2], [0.5, 80.1]] }],
#               markers: [{ x: 12.0, label: "refork" }])
class SvgChart
  PALETTE = %w[#1f77b4 #ff7f0e #2ca02c #d62728 #9467bd #8c564b #e377c2 #7f7f7f #bcbd22 #17becf
               #393b79 #637939].freeze
  WIDTH = 1000
  MARGIN_LEFT = 90
  MARGIN_RIGHT = 20
  PANEL_HEIGHT = 320
  PANEL_GAP = 70
  FONT = "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\""

  def initialize(title:, y_label:, x_label:, subtitle: nil, hatch_note: nil, note: nil)
    @title = title
    @subtitle = subtitle
    @y_label = y_label
    @x_label = x_label
    @hatch_note = hatch_note
    @note = note
    @panels = []
  end

  # Bars: panel(title, groups:, series:). Lines: panel(title, series:,
  # markers: [], x_label:, y_label:), the labels overriding the chart's.
  def panel(title, **body)
    @panels << { title: title, **body }
    self
  end

  def render
    series = @panels.flat_map { |p| p[:series] }
    names = series.map { |s| s[:name] }.uniq
    @colors = names.each_with_index.to_h { |name, i| [name, PALETTE[i % PALETTE.size]] }
    series.each { |s| @colors[s[:name]] = s[:color] if s[:color] }
    @dashed = series.select { |s| s[:dashed] }.to_h { |s| [s[:name], true] }
    legend, legend_height = legend(names)
    top = 70 + legend_height
    gap = self.class::PANEL_GAP
    body = @panels.each_with_index.map { |p, i| render_panel(p, top + i * (PANEL_HEIGHT + gap)) }
    height = top + @panels.size * (PANEL_HEIGHT + gap) - gap + (@note ? 30 : 20)
    note = @note ? text(WIDTH / 2, height - 8, @note, size: 11, anchor: "middle", fill: "#555") : nil
    [header(height), legend, *body, note, "</svg>\n"].compact.join("\n")
  end

  # Round axis steps (1, 2, 2.5, 5 x 10^k) giving about five ticks up to max.
  def self.ticks(max)
    return [0, 1] unless max&.positive?

    raw = max / 5.0
    magnitude = 10**Math.log10(raw).floor
    step = [1, 2, 2.5, 5, 10].map { |m| m * magnitude }.find { |s| s >= raw }
    (0..(max.to_f / step).ceil).map { |i| i * step }
  end

  def self.short(value)
    return value.to_s unless value.is_a?(Numeric)
    return format("%.3gM", value / 1e6) if value >= 1e6
    return format("%.3gk", value / 1e3) if value >= 1e3

    format("%.3g", value)
  end

  private

  def header(height)
    <<~SVG.chomp
      <svg xmlns="http://www.w3.org/2000/svg" width="#{WIDTH}" height="#{height}" viewBox="0 0 #{WIDTH} #{height}" #{FONT}>
      <defs><pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">
      <line x1="0" y1="0" x2="0" y2="6" stroke="#ffffff" stroke-width="3"/></pattern></defs>
      <rect width="100%" height="100%" fill="#ffffff"/>
      #{text(WIDTH / 2, 28, @title, size: 20, anchor: 'middle', weight: 'bold')}
      #{@subtitle ? text(WIDTH / 2, 50, @subtitle, size: 13, anchor: 'middle', fill: '#444') : ''}
    SVG
  end

  # Items flow left to right, 180 px each or as wide as a long name needs.
  def legend(names)
    x = MARGIN_LEFT
    y = 66
    items = names.map do |name|
      width = [180, 30 + (name.size * 7.5).ceil].max
      x, y = MARGIN_LEFT, y + 22 if x > MARGIN_LEFT && x + width > WIDTH
      item = swatch(x, y, name) + text(x + 20, y + 12, name, size: 13)
      x += width
      item
    end
    rows_height = names.empty? ? 0 : y - 66 + 22
    items << hatch_sample(66 + rows_height) if @hatch_note
    [items.join("\n"), rows_height + (@hatch_note ? 24 : 0)]
  end

  def swatch(x, y, name) = %(<rect x="#{x}" y="#{y}" width="14" height="14" fill="#{@colors[name]}"/>)

  def hatch_sample(y)
    %(<rect x="#{MARGIN_LEFT}" y="#{y}" width="14" height="14" fill="#555"/>) +
      %(<rect x="#{MARGIN_LEFT}" y="#{y}" width="14" height="14" fill="url(#hatch)"/>) +
      text(MARGIN_LEFT + 20, y + 12, @hatch_note, size: 13)
  end

  def render_panel(panel, top)
    plot_w = WIDTH - MARGIN_LEFT - MARGIN_RIGHT
    plot_h = PANEL_HEIGHT - 60
    base = top + 30 + plot_h
    max = panel[:series].flat_map { |s| s[:highs] || s[:values] }.compact.max
    ticks = self.class.ticks(max && max * 1.15) # headroom for the value labels
    scale = ->(v) { base - (v.to_f / ticks.last) * plot_h }
    parts = [text(MARGIN_LEFT, top + 16, panel[:title], size: 15, weight: "bold")]
    parts.concat(axes(panel, ticks, scale, base, top + 30))
    parts.concat(bars(panel, scale, base, plot_w))
    parts.join("\n")
  end

  # The y grid with its tick labels, both axes and their labels.
  def axes(panel, ticks, scale, base, plot_top)
    right = WIDTH - MARGIN_RIGHT
    grid = ticks.map do |t|
      y = scale.call(t).round(1)
      %(<line x1="#{MARGIN_LEFT}" y1="#{y}" x2="#{right}" y2="#{y}" stroke="#e0e0e0"/>) +
        text(MARGIN_LEFT - 8, y + 4, self.class.short(t), size: 12, anchor: "end")
    end
    mid = (plot_top + base) / 2
    grid + [
      %(<line x1="#{MARGIN_LEFT}" y1="#{base}" x2="#{right}" y2="#{base}" stroke="#333"/>),
      %(<line x1="#{MARGIN_LEFT}" y1="#{plot_top}" x2="#{MARGIN_LEFT}" y2="#{base}" stroke="#333"/>),
      text(24, mid, panel[:y_label] || @y_label, size: 13, anchor: "middle", rotate: true),
      text(MARGIN_LEFT + (right - MARGIN_LEFT) / 2, base + 42, panel[:x_label] || @x_label, size: 13, anchor: "middle")
    ]
  end

  def bars(panel, scale, base, plot_w)
    groups = panel[:groups]
    series = panel[:series]
    group_w = plot_w.to_f / groups.size
    bar_w = (group_w * 0.85) / [series.size, 1].max
    groups.each_with_index.flat_map do |label, g|
      x0 = MARGIN_LEFT + g * group_w + group_w * 0.075
      labels = [text(MARGIN_LEFT + (g + 0.5) * group_w, base + 20, label, size: 13, anchor: "middle")]
      labels + series.each_with_index.flat_map { |s, i| bar(s, g, x0 + i * bar_w, bar_w, scale, base) }
    end
  end

  def bar(series, index, x, width, scale, base)
    value = series[:values][index]
    return [] if value.nil?

    y = scale.call(value)
    w = (width * 0.88).round(1)
    out = [%(<rect x="#{x.round(1)}" y="#{y.round(1)}" width="#{w}" height="#{(base - y).round(1)}" fill="#{@colors[series[:name]]}"><title>#{esc(series[:name])}: #{value.round}</title></rect>)]
    out << %(<rect x="#{x.round(1)}" y="#{y.round(1)}" width="#{w}" height="#{(base - y).round(1)}" fill="url(#hatch)"/>) if series.dig(:hatched, index)
    out.concat(whisker(series, index, x + w / 2, scale))
    top = scale.call([value, series.dig(:highs, index)].compact.max) # above the whisker
    out << text(x + w / 2 + 4, top - 7, self.class.short(value), size: 10, rotate: true, fill: "#333")
  end

  def whisker(series, index, cx, scale)
    low = series.dig(:lows, index)
    high = series.dig(:highs, index)
    return [] unless low && high

    y1 = scale.call(low).round(1)
    y2 = scale.call(high).round(1)
    [%(<line x1="#{cx.round(1)}" y1="#{y1}" x2="#{cx.round(1)}" y2="#{y2}" stroke="#222" stroke-width="1"/>),
     %(<line x1="#{(cx - 3).round(1)}" y1="#{y2}" x2="#{(cx + 3).round(1)}" y2="#{y2}" stroke="#222"/>),
     %(<line x1="#{(cx - 3).round(1)}" y1="#{y1}" x2="#{(cx + 3).round(1)}" y2="#{y1}" stroke="#222"/>)]
  end

  def text(x, y, content, size:, anchor: "start", weight: "normal", fill: "#111", rotate: false)
    transform = rotate ? %( transform="rotate(-90 #{x.round(1)} #{y.round(1)})") : ""
    %(<text x="#{x.round(1)}" y="#{y.round(1)}" font-size="#{size}" text-anchor="#{anchor}" ) +
      %(font-weight="#{weight}" fill="#{fill}"#{transform}>#{esc(content)}</text>)
  end

  def esc(value)
    value.to_s.gsub("&", "&amp;").gsub("<", "&lt;").gsub(">", "&gt;").gsub('"', "&quot;")
  end

  # Figures over time or over a count (RSS over seconds, req/s around a refork).
  class Lines < SvgChart
    PANEL_GAP = 80

    private

    def swatch(x, y, name)
      dash = @dashed[name] ? %( stroke-dasharray="6 3") : ""
      %(<line x1="#{x}" y1="#{y + 7}" x2="#{x + 14}" y2="#{y + 7}" stroke="#{@colors[name]}" stroke-width="3"#{dash}/>)
    end

    def render_panel(panel, top)
      points = panel[:series].flat_map { |s| s[:points] }
      markers = panel[:markers] || []
      x_ticks = self.class.ticks([points.map(&:first).max.to_f, *markers.map { |m| m[:x].to_f }].max)
      y_ticks = self.class.ticks(points.map(&:last).max.to_f)
      plot_top = top + 30
      base = top + PANEL_HEIGHT - 30
      sx = ->(v) { (MARGIN_LEFT + (WIDTH - MARGIN_RIGHT - MARGIN_LEFT) * v.to_f / x_ticks.last).round(1) }
      sy = ->(v) { base - (base - plot_top) * v.to_f / y_ticks.last }
      out = [text(MARGIN_LEFT, top + 16, panel[:title], size: 15, weight: "bold"), *axes(panel, y_ticks, sy, base, plot_top)]
      x_ticks.each do |t|
        out << %(<line x1="#{sx.call(t)}" y1="#{base}" x2="#{sx.call(t)}" y2="#{base + 4}" stroke="#333"/>)
        out << text(sx.call(t), base + 20, self.class.short(t), size: 12, anchor: "middle")
      end
      markers.each do |m|
        out << %(<line x1="#{sx.call(m[:x])}" y1="#{plot_top}" x2="#{sx.call(m[:x])}" y2="#{base}" stroke="#999" stroke-dasharray="4 3"/>)
        out << text(sx.call(m[:x]) + 3, plot_top + 10, m[:label], size: 11, fill: "#555")
      end
      (out + panel[:series].flat_map { |s| line(s, sx, sy) }).join("\n")
    end

    def line(series, sx, sy)
      return [] if series[:points].empty?

      color = @colors[series[:name]]
      coords = series[:points].map { |x, y| "#{sx.call(x)},#{sy.call(y).round(1)}" }
      dash = series[:dashed] ? %( stroke-dasharray="6 3") : ""
      out = [%(<polyline fill="none" stroke="#{color}" stroke-width="2"#{dash} points="#{coords.join(' ')}"><title>#{esc(series[:name])}</title></polyline>)]
      return out if series[:points].size > 80 # dots only where they stay readable

      out + series[:points].map { |x, y| %(<circle cx="#{sx.call(x)}" cy="#{sy.call(y).round(1)}" r="2.5" fill="#{color}"/>) }
    end
  end
end
