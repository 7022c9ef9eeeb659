# frozen_string_literal: true

require_relative "coerce"

module Spindle
  class Config
    # The environment variables Rails 8's generated config/puma.rb and
    # Dockerfile size a server with, read as Puma reads them: PORT (where to
    # listen) and WEB_CONCURRENCY (how many workers; auto as --workers auto).
    # A layer between the defaults and the config file: a flag or the file
    # wins over them (docs/CONFIG.md, "Where a value comes from").
    module EnvLayer
      module_function

      # The values env sets that no higher layer does. given: the file's and
      # the command line's values; default_binds: where a rackup handler
      # listens (rails server has read PORT already, and its -p wins).
      def values(env, given, default_binds: nil)
        values = {}
        values[:port] = port(env["PORT"]) if env["PORT"] && !default_binds && !listens?(given)
        values[:workers] = workers(env["WEB_CONCURRENCY"]) if env["WEB_CONCURRENCY"] && !given.key?(:workers)
        values
      end

      def listens?(given) = LISTEN.any? { |name| given.key?(name) }

      def port(raw)
        Coerce.port(raw)
      rescue Error => e
        raise Error, "PORT in the environment: #{e.message}"
      end

      def workers(raw)
        Coerce.or_auto(raw) { |n| Coerce.non_negative_integer(n, "workers") }
      rescue Error => e
        raise Error, "WEB_CONCURRENCY in the environment: #{e.message}"
      end
    end
  end
end
