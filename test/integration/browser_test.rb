# frozen_string_literal: true

require "open3"
require_relative "../support/spindle_process"

# A real browser: headless Chromium (installed by bin/test) loads a page from
# Spindle, runs its script, and the script's fetch reaches the server too.
class BrowserTest < SpindleIntegrationTest
  CHROMIUM = "/usr/bin/chromium"
  FLAGS = %w[--headless --no-sandbox --disable-gpu --disable-quic --no-first-run
             --disable-background-networking --disable-component-update --disable-sync
             --virtual-time-budget=10000 --dump-dom].freeze

  %w[blocking threads].each do |engine|
    define_method("test_chromium_loads_a_page_and_runs_its_fetch_with_#{engine}") do
      flunk "#{CHROMIUM} is missing: bin/test installs it" unless File.executable?(CHROMIUM)
      server = SpindleProcess.start("--engine", engine, "-b", LOOPBACK, app_path("browser"))
      dom = Dir.mktmpdir("spindle-chromium") do |profile|
        out, _err, _status = Open3.capture3(CHROMIUM, *FLAGS, "--user-data-dir=#{profile}",
                                            "#{server.url}/")
        out
      end
      assert_includes dom, "answer:POST ping from=browser"
    ensure
      server&.stop
    end
  end
end
