# frozen_string_literal: true

require_relative "option"
require_relative "coerce"
require_relative "../log"

module Spindle
  class Config
    c = Coerce
    kib = 1024

    # Every option Spindle knows, in the order docs/CONFIG.md lists them.
    OPTIONS = [
      Option.new(name: :binds, default: -> { [] }, cli: "-b, --bind", arg: "URI",
                 doc: "Listen on URI: tcp://HOST:PORT (HOST an IPv4 address, an [IPv6] one, or a name, which binds " \
                      "every address it resolves to, each on the same port, the start-up line naming each; " \
                      "localhost is always both 127.0.0.1 and ::1, as clients such as curl try both " \
                      "(glibc lists ::1 first whatever order /etc/hosts gives). An address this machine cannot " \
                      "have, such as ::1 with IPv6 off, is skipped with a log line while another binds), " \
                      "unix://PATH, or " \
                      "ssl://HOST:PORT?cert=PATH&key=PATH[&ca=PATH&verify_mode=peer|force_peer] " \
                      "(TLS: docs/TLS.md). Repeat for several. PORT is 1-65535, or 0 for a free port the kernel picks. " \
                      "Add ?proxy_protocol=true to a tcp or unix bind behind a load balancer that sends the " \
                      "PROXY protocol (v1 or v2; docs/SECURITY.md): every connection must begin " \
                      "with its header. Default tcp://0.0.0.0:9292, or tcp://0.0.0.0:$PORT when the " \
                      "environment sets PORT (see --port)."),
      Option.new(name: :port, default: nil, cli: "-p, --port", arg: "PORT",
                 coerce: ->(v) { c.port(v) },
                 doc: "Shorthand for --bind tcp://0.0.0.0:PORT: 1-65535, or 0 for a free port the " \
                      "kernel picks (the start-up line shows it). An error together with --bind. " \
                      "bin/spindle given neither, nor a config file that does, serves on the " \
                      "environment's PORT when set (as Rails' generated config/puma.rb)."),
      Option.new(name: :environment, default: -> { ENV.fetch("RACK_ENV", "development") },
                 cli: "-e, --environment", arg: "ENV",
                 doc: "The RACK_ENV the app is loaded in."),
      Option.new(name: :engine, default: "threads", cli: "--engine", arg: "NAME",
                 coerce: ->(v) { c.engine(v) },
                 doc: "How one process runs requests: blocking (one at a time, the reference), " \
                      "threads (a reactor buffers requests, a bounded thread pool runs them), " \
                      "fibers (one event loop, a fiber per connection; the app's I/O yields) " \
                      "or hybrid (several threads, each with its own fiber loop)."),
      Option.new(name: :threads, default: [1, 5].freeze, cli: "-t, --threads", arg: "MIN:MAX",
                 coerce: ->(v) { c.or_auto(v) { |n| c.thread_range(n) } },
                 doc: "threads engine: the pool size (Puma's default); MAX is the most requests " \
                      "one process runs at once, and idle threads above MIN exit. auto: " \
                      "RAILS_MAX_THREADS:RAILS_MAX_THREADS, else 3:3, as Rails 8's generated " \
                      "config/puma.rb (its database.yml sizes the connection pool from the same " \
                      "variable). The other engines do not read it (hybrid's threads are --loops)."),
      Option.new(name: :loops, default: 2, cli: "--loops", arg: "N",
                 coerce: ->(v) { c.positive_integer(v, "loops") },
                 doc: "hybrid engine: its fiber loops, one thread each. A request's CPU work " \
                      "holds only its own loop's clients, but each loop past the first costs " \
                      "CPU on every request (docs/ENGINES.md)."),
      Option.new(name: :app_concurrency, default: nil, cli: "--app-concurrency", arg: "N",
                 coerce: ->(v) { c.positive_integer(v, "app_concurrency") }, nil_means: "no limit",
                 doc: "fibers and hybrid engines: the most requests one fiber loop runs in the app at once " \
                      "(hybrid: each loop); the others wait before the app, where queue time counts their " \
                      "wait and --max-queue-time can shed them. Set it to what the app can run at once, " \
                      "such as its database pool's size: past that, requests wait inside the app, unseen " \
                      "(docs/QUEUE_TIME.md). The threads engine's limit is --threads."),
      Option.new(name: :max_connections, default: 4096, cli: "--max-connections", arg: "N",
                 coerce: ->(v) { c.positive_integer(v, "max_connections") },
                 doc: "The most connections one process holds open (hybrid splits it " \
                      "evenly among its loops). At it, a new client is let in by closing " \
                      "the keep-alive connections idle the longest (then those silent for " \
                      "1 s since accept); while none may go, new clients wait in the kernel " \
                      "backlog, unread."),
      Option.new(name: :max_pending_output, default: 64, cli: "--max-pending-output", arg: "MIB",
                 coerce: ->(v) { c.positive_integer(v, "max_pending_output") },
                 doc: "The most response output one process holds for clients that have not " \
                      "read it yet, in MiB, across all connections (slow readers). Past it, " \
                      "the process starts no app call and accepts no connection until " \
                      "clients have taken enough; responses already under way still finish."),
      Option.new(name: :stall_threshold, default: 0.25, cli: "--stall-threshold", arg: "SECONDS",
                 coerce: ->(v) { c.seconds(v, "stall_threshold") },
                 doc: "fibers and hybrid engines: warn (with a backtrace) when code holds the " \
                      "event loop this long without yielding."),
      Option.new(name: :config_file, default: nil, cli: "-C, --config", arg: "FILE",
                 doc: "Read options and hooks from a Ruby config file (see the end of -h, " \
                      "and docs/CONFIG.md). Command-line flags win over the file. Without it, " \
                      "the app's config/spindle.rb (beside its config.ru) is read when there is one."),
      Option.new(name: :rackup, default: nil,
                 doc: "The rackup file to serve: the argument, else ./config.ru, " \
                      "else the bundled demo app."),
      # Logs (docs/LOGGING.md).
      Option.new(name: :log_format, default: "text", cli: "--log-format", arg: "FORMAT",
                 coerce: ->(v) { Log.check_choice(v, Log::LineFormat::NAMES, "log_format") },
                 doc: "How server log lines look: text (timestamp pid [role] LEVEL message) or " \
                      "json (one object per line). Every line carries an ISO 8601 UTC timestamp, " \
                      "the pid, the role (master, worker N, mold, single) and the level."),
      Option.new(name: :log_file, default: nil, cli: "--log-file", arg: "PATH",
                 doc: "Write the server log to PATH (appending) instead of stdout and stderr. " \
                      "HUP reopens it (logrotate), in the master and every worker."),
      Option.new(name: :access_log, default: nil, cli: "--access-log", arg: "PATH",
                 doc: "One line per request to PATH (appending; - for stdout): remote address, " \
                      "method, target, status, body bytes sent, duration, user agent and request id " \
                      "(X-Request-Id). Never a body, never Authorization or Cookie. HUP reopens it. " \
                      "Off by default, and then it costs nothing per request."),
      Option.new(name: :access_log_format, default: "combined", cli: "--access-log-format",
                 arg: "FORMAT",
                 coerce: ->(v) { Log.check_choice(v, Log::AccessLog::FORMATS, "access_log_format") },
                 doc: "common (Common Log Format), combined (Combined Log Format, then the request " \
                      "id and the duration in ms) or json (one object per line)."),
      Option.new(name: :log_requests, default: false, cli: "--log-requests",
                 coerce: ->(v) { c.boolean(v) },
                 doc: "Alias of --access-log - (the access log on stdout), kept for old command lines."),
      Option.new(name: :early_hints, default: false, cli: "--[no-]early-hints",
                 coerce: ->(v) { c.boolean(v) },
                 doc: "Offer rack.early_hints, so an app can send 103 Early Hints. Off by default, " \
                      "as in Puma: browsers act on 103 only over HTTP/2 and 3, and HTTP/1.1 " \
                      "clients that mishandle 1xx take it for the response."),
      Option.new(name: :quiet, default: false, cli: "-q, --quiet", coerce: ->(v) { c.boolean(v) },
                 doc: "Log only the start-up line and errors."),
      Option.new(name: :backlog, default: 1024, cli: "--backlog", arg: "N",
                 coerce: ->(v) { c.positive_integer(v, "backlog") },
                 doc: "Listen backlog: connections the kernel queues while every thread is busy."),
      Option.new(name: :keepalive_timeout, default: 20.0, cli: "--keepalive-timeout", arg: "SECONDS",
                 coerce: ->(v) { c.seconds(v, "keepalive_timeout") },
                 doc: "Close a keep-alive connection idle this long between requests."),
      Option.new(name: :header_timeout, default: 30.0, cli: "--header-timeout", arg: "SECONDS",
                 coerce: ->(v) { c.seconds(v, "header_timeout") },
                 doc: "Answer 408 and close when a request head is not complete this long " \
                      "after its first byte (slowloris)."),
      Option.new(name: :read_timeout, default: 30.0, cli: "--read-timeout", arg: "SECONDS",
                 coerce: ->(v) { c.seconds(v, "read_timeout") },
                 doc: "Answer 408 and close when a request body sends nothing for this long."),
      Option.new(name: :min_body_rate, default: 500, cli: "--min-body-rate", arg: "BYTES_PER_SECOND",
                 coerce: ->(v) { c.positive_integer(v, "min_body_rate") }, nil_means: "only read_timeout applies",
                 doc: "A request body must average at least this rate: each byte received buys " \
                      "1/rate seconds beyond read_timeout from the body's start (408 otherwise)."),
      Option.new(name: :write_timeout, default: 30.0, cli: "--write-timeout", arg: "SECONDS",
                 coerce: ->(v) { c.seconds(v, "write_timeout") },
                 doc: "Close a connection whose client reads none of its response for this long."),
      Option.new(name: :request_timeout, default: nil, cli: "--request-timeout", arg: "SECONDS",
                 coerce: ->(v) { c.seconds(v, "request_timeout") }, nil_means: "no deadline",
                 doc: "Each request's deadline for the app's call, in env[\"spindle.deadline\"] (the app may " \
                      "move it). Past it: fibers and hybrid raise Spindle::RequestTimeout at the request's next " \
                      "wait; blocking and threads flag it and turn what it returns into a 503; in a cluster, a " \
                      "worker whose request runs past twice the deadline is replaced (docs/DEADLINES.md)."),
      Option.new(name: :shutdown_timeout, default: 30.0, cli: "--shutdown-timeout", arg: "SECONDS",
                 coerce: ->(v) { c.seconds(v, "shutdown_timeout") },
                 doc: "On TERM/INT, how long in-flight requests may take before the process exits anyway."),
      # Behind a load balancer (docs/DRAINING.md, docs/SECURITY.md).
      Option.new(name: :health_path, default: nil, cli: "--health-path", arg: "PATH",
                 coerce: ->(v) { c.health_path(v) },
                 doc: "Answer GET and HEAD of PATH (the path only; any query is ignored) in the " \
                      "server, without calling the app: 200 while serving, 503 once a stop has " \
                      "begun (the drain delay and the drain), for load balancers' health checks."),
      Option.new(name: :static, default: nil, cli: "--static", arg: "DIR",
                 coerce: ->(v) { c.directory(v, "static") },
                 doc: "Answer GET and HEAD of the files under DIR in the server, before the app " \
                      "(like nginx's try_files in front of it): a path naming a regular file under DIR " \
                      "gets it, with etag and last-modified (304 when unchanged); anything else goes to " \
                      "the app. Dot segments, hidden files and symlinks out of DIR are never served " \
                      "(docs/STATIC.md)."),
      Option.new(name: :drain_delay, default: nil, cli: "--drain-delay", arg: "SECONDS",
                 coerce: ->(v) { c.non_negative_seconds(v, "drain_delay") },
                 doc: "On TERM, INT or QUIT, keep accepting and serving this long first, while the " \
                      "health path answers 503 and every response says connection: close, so " \
                      "load balancers take the host out of their pool before any connection is " \
                      "refused; then drain. A second signal stops at once. Default: 0 without " \
                      "--health-path, 10 with one (docs/DRAINING.md)."),
      Option.new(name: :trusted_proxies, default: nil, cli: "--trusted-proxies", arg: "CIDR,...",
                 coerce: ->(v) { c.networks(v, "trusted_proxies") },
                 doc: "Peers (IPv4 or IPv6 addresses or CIDR networks, e.g. 127.0.0.1,10.0.0.0/8,::1) " \
                      "whose X-Forwarded-For (REMOTE_ADDR: the right-most untrusted address), " \
                      "X-Forwarded-Proto (rack.url_scheme) and X-Forwarded-Host (HTTP_HOST, " \
                      "SERVER_NAME, SERVER_PORT) are believed. From any other peer they reach the " \
                      "app untouched and are never used (docs/SECURITY.md)."),
      Option.new(name: :max_queue_time, default: nil, cli: "--max-queue-time", arg: "SECONDS",
                 coerce: ->(v) { c.seconds(v, "max_queue_time") },
                 doc: "Answer 503 (Retry-After: 1), without calling the app, a request " \
                      "that has waited longer than this before its app call: since its first byte " \
                      "arrived (TCP; TLS and Unix sockets: was read), or since the X-Request-Start (or X-Queue-Start) stamp of a --trusted-proxies " \
                      "peer when that is earlier. The 503 closes a client's connection and keeps a " \
                      "trusted proxy's. The health path is never shed. Counted in the metrics, " \
                      "logged at most once a second (docs/QUEUE_TIME.md)."),
      Option.new(name: :max_keepalive_requests, default: 1000, cli: "--max-keepalive-requests", arg: "N",
                 coerce: ->(v) { c.positive_integer(v, "max_keepalive_requests") },
                 doc: "Requests served on one connection before it is closed."),
      Option.new(name: :workers, default: 0, cli: "-w, --workers", arg: "N",
                 coerce: ->(v) { c.or_auto(v) { |n| c.non_negative_integer(n, "workers") } },
                 doc: "Cluster mode: a master holds the listeners and supervises N worker " \
                      "processes, each running the engine. 0: one process, no master. auto: " \
                      "the container's CPU quota (cgroup v2 cpu.max or v1 cpu.cfs_quota_us), " \
                      "rounded up, at least 1 and at most the CPUs this process may run on " \
                      "(its affinity mask), which is the count without a quota; logged at start " \
                      "with what was found (docs/SIZING.md). Without this option, " \
                      "WEB_CONCURRENCY (a number or auto) when set."),
      Option.new(name: :preload, default: true, cli: "--[no-]preload",
                 coerce: ->(v) { c.boolean(v) },
                 doc: "Cluster mode: load the app once in the master and fork workers from it, " \
                      "sharing its memory copy-on-write. Off: each worker loads the app itself " \
                      "(so a phased restart picks up new code)."),
      Option.new(name: :cpu_affinity, default: "auto", cli: "--[no-]cpu-affinity", arg: "[=MODE]",
                 coerce: ->(v) { c.cpu_affinity(v) },
                 doc: "Pin threads to a CPU. A process runs Ruby on one core at a time (the GVL); " \
                      "unpinned, each handoff of it between threads may land on another core, with cold " \
                      "caches. MODE auto (the default): with the threads or hybrid engine and fewer " \
                      "processes than CPUs, as app, on a CPU drawn at random for worker 0, and while " \
                      "other processes use a quarter of that CPU or more the app threads move once to a " \
                      "free one, then unpin for good; otherwise unpinned. MODE app: the threads that run " \
                      "the app (the threads engine's pool, hybrid's loops, the serving thread) on worker " \
                      "i's CPU, the i-th the server may use (round the list), so the reactor and the " \
                      "database run beside them, never moved. MODE process (a bare flag): every thread " \
                      "of the process, never moved. --no-cpu-affinity: never pin (docs/ENGINES.md). Linux."),
      Option.new(name: :worker_timeout, default: 60.0, cli: "--worker-timeout", arg: "SECONDS",
                 coerce: ->(v) { c.seconds(v, "worker_timeout") },
                 doc: "Cluster mode: kill and replace a worker that has not booted, has not checked in, or " \
                      "whose oldest request has run, for this long (it logs its threads first). " \
                      "A refork is held to it too: the worker becoming the mold must drain, run " \
                      "before_refork and warm up with no longer silence, and the first worker of " \
                      "the new generation must boot within it, or the refork fails (docs/REFORKING.md). " \
                      "Alone (no -w) it does nothing, and a warning at start says so."),
      Option.new(name: :refork_after, default: nil, cli: "--refork-after", arg: "N[,N2,...]",
                 coerce: ->(v) { c.count_list(v, "refork_after") },
                 doc: "Cluster mode: refork from a warmed worker once a worker of generation g has served " \
                      "the g-th count of requests (the last count repeats). Off by default. Alone (no -w) " \
                      "it does nothing, and a warning at start says so."),
      Option.new(name: :lean_heap, default: nil, cli: "--[no-]lean-heap",
                 coerce: ->(v) { v.nil? ? nil : c.boolean(v) },
                 doc: "Start Ruby with a lean object heap (RUBY_GC_HEAP_FREE_SLOTS_MIN_RATIO=0.02, " \
                      "RUBY_GC_HEAP_GROWTH_MAX_SLOTS=100000, RUBY_GC_OLDMALLOC_LIMIT=64 MiB) unless " \
                      "the environment sets them, so workers forked from a mold fill its shared " \
                      "pages instead of growing their own, and run fewer major GCs. Default: on " \
                      "when --refork-after is set. Costs more frequent minor GCs."),
      Option.new(name: :worker_memory_limit, default: nil, cli: "--worker-memory-limit", arg: "MB",
                 coerce: ->(v) { c.or_auto(v) { |n| c.positive_integer(n, "worker_memory_limit") } },
                 doc: "Recycle a worker gracefully (replacement first) when its private " \
                      "memory (USS) passes this many MiB. Alone (no -w), the process restarts itself " \
                      "in place, as USR2 does; one started through rackup, which cannot, logs a " \
                      "warning instead (docs/MEMORY.md). auto: the container's memory limit " \
                      "(cgroup v2 memory.max or v1 memory.limit_in_bytes) × 0.9, divided by the " \
                      "workers + 1 (the master's share), or by 2 alone (the restart in place runs " \
                      "two processes); logged at start, and no limit when the container has none."),
      Option.new(name: :oob_gc_every, default: nil, cli: "--oob-gc", arg: "N",
                 coerce: ->(v) { c.positive_integer(v, "oob_gc_every") },
                 doc: "Run a full GC between requests, when none is in flight, every N requests."),
      Option.new(name: :control, default: nil, cli: "--control", arg: "URI",
                 doc: "Control endpoint for bin/spindlectl: unix://PATH (mode 0600) " \
                      "or tcp://HOST:PORT (then --control-token is required). In cluster mode the " \
                      "master serves it; alone, a thread of the process does, and the commands that " \
                      "need workers are refused (docs/STATS.md)."),
      Option.new(name: :control_token, default: nil, cli: "--control-token", arg: "TOKEN",
                 doc: "The secret a TCP control client must send."),
      Option.new(name: :metrics, default: nil, cli: "--metrics", arg: "URI",
                 doc: "Serve Prometheus metrics (text format 0.0.4) at GET /metrics on URI: " \
                      "tcp://HOST:PORT or unix://PATH. In cluster mode the master serves them, " \
                      "never a worker; alone, a thread of the process does. Not the app's " \
                      "listener: bind it where only the scraper reaches. See docs/METRICS.md."),
      Option.new(name: :pidfile, default: nil, cli: "--pidfile", arg: "PATH",
                 doc: "Write the pid of the process to signal (the master, or the single process) " \
                      "to PATH, atomically, at start; rewritten by the new master after a USR2 " \
                      "restart, removed at exit. A file naming a live Spindle process is a start-up " \
                      "error; one naming a dead process is replaced."),
      Option.new(name: :sidecars, default: -> { [] }, cli: "--sidecar", arg: "CMD",
                 coerce: ->(v) { c.sidecars(v) },
                 doc: "Run CMD beside the server and keep it running, as Puma's solid_queue plugin runs " \
                      "Solid Queue: started once the workers serve, started again (after a back-off, as a " \
                      "worker that fails to boot) when it exits, left alone by a phased restart or a " \
                      "refork, and stopped with the server (TERM, then KILL after --shutdown-timeout). " \
                      "Repeat for several. In a config file: sidecar \"bin/jobs\", name: \"solid_queue\" " \
                      "(the name in the log and in spindlectl stats; default the command's first word). " \
                      "A process serving alone (no -w) runs them too, from a thread of its own."),
      Option.new(name: :restart_file, default: nil, cli: "--restart-file", arg: "PATH",
                 doc: "Restart when PATH's modification time changes (checked once a second), as Puma's " \
                      "tmp_restart plugin: `bin/rails restart` touches tmp/restart.txt. The restart is a " \
                      "hot restart (as USR2: new code, a new master or process) when the server can rerun " \
                      "its command line, else a phased restart (USR1) in a cluster; the log says which. Off " \
                      "by default, as the plugin is (Rails' generated config/puma.rb names it)."),
      Option.new(name: :malloc_arena_max, default: 2, cli: "--malloc-arenas", arg: "N",
                 coerce: ->(v) { c.non_negative_integer(v, "malloc_arena_max") },
                 doc: "malloc arenas, set at start: glibc's MALLOC_ARENA_MAX unless the environment " \
                      "sets it, and under jemalloc narenas in MALLOC_CONF unless the environment sets " \
                      "MALLOC_CONF. Fewer arenas: far less fragmentation under threads. " \
                      "0: leave the allocator's default (glibc 8 per core, jemalloc 4 per core)."),
      Option.new(name: :allocator, default: "auto", cli: "--allocator", arg: "NAME",
                 coerce: ->(v) { c.allocator(v) },
                 doc: "auto: jemalloc when Debian's libjemalloc.so.2 is installed (preloaded at start), " \
                      "glibc otherwise. glibc, or jemalloc (an error when it is not installed)."),
      Option.new(name: :body_spool_threshold, default: 64 * kib, arg: "BYTES",
                 coerce: ->(v) { c.non_negative_integer(v, "body_spool_threshold") },
                 doc: "Request bodies larger than this go to an unlinked tempfile, not memory."),
      Option.new(name: :max_body, default: 100 * kib * kib, cli: "--max-body", arg: "BYTES",
                 coerce: ->(v) { c.positive_integer(v, "max_body") }, nil_means: "no limit",
                 doc: "Largest request body accepted (413 above it, refused before it is read)."),
      Option.new(name: :max_request_line, default: 8 * kib, arg: "BYTES",
                 coerce: ->(v) { c.positive_integer(v, "max_request_line") },
                 doc: "Longest request line (414 above it)."),
      Option.new(name: :max_field_name, default: 256, arg: "BYTES",
                 coerce: ->(v) { c.positive_integer(v, "max_field_name") },
                 doc: "Longest header field name (431)."),
      Option.new(name: :max_field_value, default: 8 * kib, arg: "BYTES",
                 coerce: ->(v) { c.positive_integer(v, "max_field_value") },
                 doc: "Longest header field value (431)."),
      Option.new(name: :max_head, default: 64 * kib, arg: "BYTES",
                 coerce: ->(v) { c.positive_integer(v, "max_head") },
                 doc: "Largest request head, request line to blank line (431)."),
      Option.new(name: :max_fields, default: 100, arg: "N",
                 coerce: ->(v) { c.positive_integer(v, "max_fields") },
                 doc: "Most header fields in one request (431)."),
      Option.new(name: :max_chunk_ext, default: 1 * kib, arg: "BYTES",
                 coerce: ->(v) { c.positive_integer(v, "max_chunk_ext") },
                 doc: "Most chunk-extension bytes on one chunk line (400)."),
      Option.new(name: :max_chunk_ext_total, default: 16 * kib, arg: "BYTES",
                 coerce: ->(v) { c.positive_integer(v, "max_chunk_ext_total") },
                 doc: "Most chunk-extension bytes in one request body (400)."),
      Option.new(name: :max_trailer, default: 8 * kib, arg: "BYTES",
                 coerce: ->(v) { c.positive_integer(v, "max_trailer") },
                 doc: "Largest trailer section of a chunked body (431)."),
    ].freeze

    BY_NAME = OPTIONS.to_h { |o| [o.name, o] }.freeze
  end
end
