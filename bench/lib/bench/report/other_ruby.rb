# frozen_string_literal: true

require "json"
require_relative "runs"

module Bench
  module Report
    # A real-app page shows its own run, on one Ruby; the issue asks for both
    # (3.1, and 3.3 with YJIT). This finds, beside the page's JSON, the
    # newest run of the same scenario on another Ruby minor version, so the
    # page can show that run's table too instead of losing it.
    module OtherRuby
      module_function

      # The newest other-Ruby run beside summary's source, as [path, record];
      # nil when there is none (or the summary was not read from a file).
      def newest(summary)
        path = summary.source or return nil
        mine = minor(summary.record)
        name = summary.record.dig(:scenario, :name)
        (Runs.of(name, File.dirname(path)) - [path]).each do |other|
          record = JSON.parse(File.read(other), symbolize_names: true)
          return [other, record] if (theirs = minor(record)) && theirs != mine
        end
        nil
      end

      # "3.3" from the record's "ruby 3.3.8 (...)"; nil when not recorded.
      def minor(record) = record.dig(:machine, :ruby).to_s[/\Aruby (\d+\.\d+)/, 1]
    end
  end
end
