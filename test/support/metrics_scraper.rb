# frozen_string_literal: true

require "open3"
require_relative "http_client"

# Scrapes a server's --metrics endpoint as Prometheus does (GET /metrics, a
# fresh connection each time), checks the text with Debian's promtool, and
# reads samples out of it.
module MetricsScraper
  PROMTOOL = "/usr/bin/promtool"
  # The message, after the log line's timestamp, pid, role and level.
  ENDPOINT_LINE = %r{ spindle: metrics at tcp://([\d.]+):(\d+) \(GET /metrics\)$}

  # One scrape's samples: "name{labels}" => value.
  class Scrape
    attr_reader :text

    def initialize(text)
      @text = text
      @samples = text.each_line.reject { |l| l.start_with?("#") }.to_h do |line|
        series, value = line.split(" ", 2)
        [series, Float(value)]
      end
    end

    # The value of one series, e.g. scrape["spindle_requests_total", worker: 0]; nil when absent.
    def [](name, **labels)
      @samples[series(name, labels)]
    end

    # The sum of every series of a metric name, e.g. over all workers.
    def sum(name) = @samples.sum { |series, value| series.match?(/\A#{name}(\{|\z)/) ? value : 0 }

    private

    def series(name, labels)
      return name if labels.empty?

      "#{name}{#{labels.map { |key, value| "#{key}=\"#{value}\"" }.join(',')}}"
    end
  end

  # Where the server said its endpoint listens: [host, port].
  def metrics_address(process)
    match = process.wait_for_output(ENDPOINT_LINE) or flunk "no metrics endpoint line:\n#{process.output}"
    [match[1], Integer(match[2])]
  end

  # Scrapes, asserts a 200 with the exposition's content type, and returns a Scrape.
  def scrape(process)
    host, port = metrics_address(process)
    connection = HttpClient.connect(host, port)
    connection.write("GET /metrics HTTP/1.1\r\nHost: #{host}\r\nAccept: text/plain\r\n\r\n")
    response = connection.read_response
    assert_equal 200, response.status, "the metrics endpoint:\n#{response}"
    assert_equal "text/plain; version=0.0.4; charset=utf-8", response["content-type"]
    Scrape.new(response.body)
  ensure
    connection&.close
  end

  # A scrape, or nil when the endpoint does not answer 200 now (a process
  # between two owners of the address after a restart).
  def scrape_if_up(host, port)
    connection = HttpClient.connect(host, port)
    connection.write("GET /metrics HTTP/1.1\r\nHost: #{host}\r\n\r\n")
    response = connection.read_response
    Scrape.new(response.body) if response.status == 200
  rescue SystemCallError, IOError, HttpClient::Timeout, HttpClient::ProtocolError
    nil
  ensure
    connection&.close
  end


  def assert_promtool_accepts(scrape)
    skip "promtool is not installed (Debian's prometheus package; bin/test installs it)" unless File.executable?(PROMTOOL)
    out, status = Open3.capture2e(PROMTOOL, "check", "metrics", stdin_data: scrape.text)
    assert status.success?, "promtool check metrics refused the scrape:\n#{out}\n#{scrape.text}"
    assert_empty out.strip, "promtool's lint found problems:\n#{out}"
  end
end
