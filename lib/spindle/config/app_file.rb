# frozen_string_literal: true

module Spindle
  class Config
    # An app's own config file, found the way Puma finds config/puma.rb: a Rails
    # app (or any app laid out like one) keeps its server settings in
    # config/spindle.rb, and `bundle exec spindle` and `rails server -u spindle`
    # read it without a -C. An explicit -C (or -O Config=) wins: the found file
    # is then not read at all.
    module AppFile
      PATH = File.join("config", "spindle.rb")

      module_function

      # config/spindle.rb beside the rackup file, or nil when there is none.
      def find(rackup)
        path = File.join(File.dirname(File.expand_path(rackup)), PATH)
        File.file?(path) ? path : nil
      end
    end
  end
end
