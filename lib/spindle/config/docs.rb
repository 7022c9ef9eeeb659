# frozen_string_literal: true

require_relative "options"
require_relative "dsl"
require_relative "rackup_options"

module Spindle
  class Config
    # Renders docs/CONFIG.md from OPTIONS. test/unit/config_docs_test.rb fails
    # when the file and the code disagree; regenerate with bin/docs.
    module Docs
      module_function

      def markdown
        [header, table, sources, dsl_example, hooks, rackup, exit_status].join("\n")
      end

      def header
        <<~MD
          # Configuration

          <!-- Generated from lib/spindle/config/options.rb by bin/docs. Do not edit by hand. -->

          Every option can be set in a config file (`bin/spindle -C FILE`). Most can also
          be set by a command-line flag. The flags win over the file, the file over the
          environment's `PORT` and `WEB_CONCURRENCY`, and those over the defaults ("Where a
          value comes from", below). In the file, each option is a method named after it.
        MD
      end

      def table
        rows = OPTIONS.map do |o|
          flag = o.cli ? "`#{o.spelled(o.cli)}`" : "—"
          "| `#{o.name}` | #{flag} | #{default_text(o)} | #{o.description} |"
        end
        ["| option | flag | default | what it does |", "|---|---|---|---|", *rows, ""].join("\n")
      end

      def default_text(option)
        value = option.default_value
        return "—" if value.nil? || value == []

        "`#{value.is_a?(Array) ? value.join(':') : value}`"
      end

      def sources
        <<~MD
          ## Where a value comes from

          Each option takes the first of: the command-line flag, the config file, the
          environment, the default. The environment gives two, the variables Rails 8's
          generated `config/puma.rb` and Dockerfile size a server with, as Puma reads them:

          | variable | option | read when |
          |---|---|---|
          | `PORT` | `port` | neither the command line nor the config file names a listener (`bind` or `port`), and the server is bin/spindle (`bundle exec spindle`): under `rails server -u spindle`, Rails has read `PORT` already, and its `-p` wins over it |
          | `WEB_CONCURRENCY` | `workers` | neither the command line nor the config file sets `workers`; `auto` means `--workers auto` |

          A bad value in either is a start-up error naming the variable. With `auto`
          (`workers`, `threads`, `worker_memory_limit`, on the command line, in the file or
          in `WEB_CONCURRENCY`) the number is settled at start from the container's
          cgroup limits, and one log line each says what was found and why; docs/SIZING.md
          has the rules and their reasons.
        MD
      end

      def dsl_example
        <<~'MD'
          ## Config file

          The file is plain Ruby. Each option above is a method named after it, taking
          the value the flag takes (as a string or as a Ruby value); `bind` may be called
          several times, `sidecar "bin/jobs", name: "solid_queue"` adds one sidecar each
          time (`sidecars` sets the whole list), `threads` takes the minimum and maximum, and an option whose
          description offers nil takes `nil`. A flag on the command line wins over the
          file. Naming a listener on the command line (`-b` or `-p`) replaces the file's
          `bind` and `port` both; `port` and `bind` given together in one place are an
          error (which did you mean?).

          ```ruby
          # spindle.rb, used as: bin/spindle -C spindle.rb
          bind "tcp://0.0.0.0:8080"
          bind "unix:///run/app.sock"   # each bind adds a listener
          engine "threads"
          threads 2, 16                 # min, max
          keepalive_timeout 5
          max_body 10 * 1024 * 1024     # or nil: no limit
          log_requests true
          workers :auto                 # from the container's CPU quota (or a number)
          sidecar "bin/jobs", name: "solid_queue"   # kept running beside the workers
          restart_file "tmp/restart.txt"           # bin/rails restart

          before_fork { DB.disconnect }                   # master: workers must not share it
          after_worker_fork { |index| Stats.tag(worker: index) }
          after_refork { |index| Stats.tag(worker: index) }
          ```

          `environment` sets RACK_ENV before the app loads; `rackup` names the app file
          when none is given on the command line.
        MD
      end

      def hooks
        rows = DSL::HOOKS.map do |hook|
          # A | inside a table cell ends the cell, even in a code span.
          block = hook.block_args.empty? ? "{ ... }" : "{ #{hook.block_args.gsub('|', '\\|')} ... }"
          "| `#{hook.name} #{block}` | #{hook.doc} |"
        end
        <<~MD
          ## Hooks

          Blocks the config file gives, run at moments of a cluster's life (`workers` of
          1 or more; a single process runs none, and warns at start for each one
          given). Each hook may be given several times;
          its blocks run in the order given. An exception in `after_worker_fork` or
          `after_refork` fails that worker's boot; the master replaces it, with a growing
          delay.

          | hook | when and where it runs |
          |---|---|
          #{rows.join("\n")}
        MD
      end

      def rackup
        rows = RackupOptions.offered.map do |o|
          "`-O #{o.spelled(RackupOptions.name_of(o), '=')}`"
        end
        left = RackupOptions::LEFT_TO_RACKUP.map { |name, where| "`#{name}` is #{where}" }
        <<~MD
          ## Through rackup

          `rackup -s spindle` (and `rails server -u spindle`) takes every option above as
          `-O Name=VALUE`, the name being the long flag (or the option's name) in
          CamelCase. A bare `-O Name` is true (`-O Preload=false` turns one off), and
          `-O Bind` takes several URIs separated by commas:

          #{rows.join(', ')}.

          Rackup gives the rest itself: #{left.join('; ')}. `-O Bind`, or a config file's
          `bind` (`-O Config=FILE`), replaces rackup's host and port; under `rails server`,
          a `-p` or `-b` typed on its command line (or `PORT`, `HOST`, `BINDING` in the
          environment) replaces the file's `bind` in turn (docs/ENGINES.md, "Rails").

          The names are CamelCase, as rackup's own `Host` and `Port` are. A CamelCase
          name that is neither Spindle's nor rackup's (`Host`, `Port`, `AccessLog`) is
          refused, and so is one of Spindle's names spelled another way (`-O engine=fibers`,
          `-O max_body=1`), with the right spelling in the message. They are not read
          case-insensitively: rackup and `rails server` pass their own settings in lower
          case in the same hash, some under the same words (`config` is rackup's
          config.ru, `quiet` its `-q`, `early_hints` rails server's `--early-hints`).

          A failed start is one line on stderr and exit status 2, as from bin/spindle
          (below): a bad name or value, a config file that fails, a listener it cannot
          open (a port in use), a C extension that was never built (a path gem on a
          clone: run the clone's `bin/build-ext` once). Only a handler run on another
          thread than the main one (a test harness's) raises the error to its caller.

          The allocator settings (`MallocArenas`, `LeanHeap`, `Allocator`) are read at
          process start: as bin/spindle does, the handler re-executes the process once,
          with the command line the kernel recorded for it, when they must change. Under
          `rails server` it does so as soon as the handler is loaded, before Rails prints
          its boot lines (`=> Booting Spindle`) and boots the app, so both happen once.
        MD
      end

      # The same three outcomes bin/spindle's help prints.
      EXIT_STATUS = [
        [0, "the server stopped cleanly, or -h / -v"],
        [1, "the app could not be loaded (rackup file missing, raising, or without `run`); " \
            "or a stop forced by a second signal or by `shutdown_timeout` (docs/SIGNALS.md)"],
        [2, "Spindle could not start with what it was given: a bad flag or value, a config " \
            "file that fails, a listener or control endpoint it cannot open (in use, a " \
            "privileged port, a missing directory, a port outside 0-65535), or a checkout " \
            "it cannot set up. One line on stderr says which; no backtrace"],
      ].freeze

      def exit_status
        rows = EXIT_STATUS.map { |code, meaning| "| #{code} | #{meaning}. |" }
        <<~MD
          ## Exit status of bin/spindle

          | status | meaning |
          |---|---|
          #{rows.join("\n")}
        MD
      end
    end
  end
end
