# frozen_string_literal: true

module Bench
  module Report
    # The runs of a scenario kept in DIR/data: NAME-YYYYMMDD-HHMMSS.json, one
    # per run, so their names sort by when they ran.
    module Runs
      module_function

      # Paths in data_dir, newest first.
      def of(name, data_dir)
        pattern = /\A#{Regexp.escape(name)}-\d{8}-\d{6}\.json\z/
        Dir[File.join(data_dir, "#{name}-*.json")].select { |p| File.basename(p).match?(pattern) }.sort.reverse
      end
    end
  end
end
