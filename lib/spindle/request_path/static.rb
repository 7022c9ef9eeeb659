# frozen_string_literal: true

require_relative "../request/static_files"

module Spindle
  class RequestPath
    # App stage, last before the app (--static): a request naming a file
    # under the directory gets it from the server (StaticFiles); every other
    # request goes to the app unchanged.
    class Static
      def initialize(app, files)
        @app = app
        @files = files
      end

      def call(env) = @files.response(env) || @app.call(env)
    end
  end
end
