# frozen_string_literal: true

# A grouped bar chart as a standalone SVG string, with no dependency beyond
# Ruby itself. Panels stack vertically and share one legend; each panel has
# groups along x (e.g. connection counts) and one bar per series in each
# group, with optional min/max whiskers and hatching for flagged bars.
#
#   chart = SvgChart.new(title: "Hello world", y_label: "requests/s", x_label: "connections")
#   chart.panel("1 process", groups: %w[16 64 256], series: [
#     { name: "puma", values: [9e3, 9.5e3, 9.1e3], lows: [...], highs: [...], hatched: [false, true, false] },
#   ])
#   File.write("hello.svg", chart.render)
class SvgChart
  PALETTE = %w[#1f77b4 #ff7f0e #2ca02c #d62728 #9467bd #8c564b #e377c2 #7f7f7f #bcbd22 #17becf
               #393b79 #637939].freeze
  WIDTH = 1000
  MARGIN_LEFT = 90
  MARGIN_RIGHT = 20
  PANEL_HEIGHT = 320
  PANEL_GAP = 70
  FONT = "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\""

  def initialize(title:, y_label:, x_label:, subtitle: nil, hatch_note: nil)
    @title = title
    @subtitle = subtitle
    @y_label = y_label
    @x_label = x_label
    @hatch_note = hatch_note
    @panels = []
  end

  def panel(title, groups:, series:)
    @panels << { title: title, groups: groups, series: series }
    self
  end

  def render
    series = @panels.flat_map { |p| p[:series].map { |s| s[:name] } }.uniq
    @colors = series.each_with_index.to_h { |name, i| [name, PALETTE[i % PALETTE.size]] }
    @panels.each { |p| p[:series].each { |s| @colors[s[:name]] = s[:color] if s[:color] } }
    legend, legend_height = legend(series)
    top = 70 + legend_height
    body = @panels.each_with_index.map { |p, i| render_panel(p, top + i * (PANEL_HEIGHT + PANEL_GAP)) }
    height = top + @panels.size * (PANEL_HEIGHT + PANEL_GAP) - PANEL_GAP + 20
    [header(height), legend, *body, "</svg>\n"].join("\n")
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

  def legend(names)
    per_row = 5
    rows = names.each_slice(per_row).to_a
    items = rows.each_with_index.flat_map do |row, r|
      row.each_with_index.map do |name, i|
        x = MARGIN_LEFT + i * 180
        y = 66 + r * 22
        %(<rect x="#{x}" y="#{y}" width="14" height="14" fill="#{@colors[name]}"/>) +
          text(x + 20, y + 12, name, size: 13)
      end
    end
    note_y = 66 + rows.size * 22
    items << hatch_sample(note_y) if @hatch_note
    [items.join("\n"), rows.size * 22 + (@hatch_note ? 24 : 0)]
  end

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
    parts.concat(axes(ticks, scale, base, plot_w, top + 30))
    parts.concat(bars(panel, scale, base, plot_w))
    parts.join("\n")
  end

  def axes(ticks, scale, base, plot_w, plot_top)
    grid = ticks.map do |t|
      y = scale.call(t).round(1)
      %(<line x1="#{MARGIN_LEFT}" y1="#{y}" x2="#{MARGIN_LEFT + plot_w}" y2="#{y}" stroke="#e0e0e0"/>) +
        text(MARGIN_LEFT - 8, y + 4, self.class.short(t), size: 12, anchor: "end")
    end
    mid = (plot_top + base) / 2
    grid + [
      %(<line x1="#{MARGIN_LEFT}" y1="#{base}" x2="#{MARGIN_LEFT + plot_w}" y2="#{base}" stroke="#333"/>),
      %(<line x1="#{MARGIN_LEFT}" y1="#{plot_top}" x2="#{MARGIN_LEFT}" y2="#{base}" stroke="#333"/>),
      text(24, mid, @y_label, size: 13, anchor: "middle", rotate: true),
      text(MARGIN_LEFT + plot_w / 2, base + 42, @x_label, size: 13, anchor: "middle")
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
end
