# frozen_string_literal: true

# Every server the harness can run, in the order reports list them. One entry
# says how to start the server on launch.port with launch.threads threads per
# process and launch.processes processes; the harness starts each one the same
# way (fresh port, wait until it answers, warm up, measure, stop its process
# group). Adding a server is adding one entry.
#
# Settings are each server's defaults except the ones every server gets alike:
# the address (127.0.0.1 only), the thread count where threads apply, the
# process count, quiet logging and RACK_ENV=production.
module Bench
  s = SERVERS

  # Spindle: one entry per engine: engine => [model, whether -t applies,
  # notes]. -t sizes the threads engine's pool, as Puma's threads; hybrid
  # runs its default loops unless the scenario sets a count for it
  # (--loops), and blocking and fibers run on one thread.
  engines = {
    "blocking" => ["one request at a time per process (the reference)", false, "one thread"],
    "threads" => ["reactor + thread pool", true, nil],
    "fibers" => ["one fiber loop, a fiber per connection", false, "one thread"],
    "hybrid" => ["several threads, each with a fiber loop", false, "its default 2 loops (docs/ENGINES.md)"],
  }
  # 2-process runs pass -w 2; while bin/spindle rejects the flag (it exits
  # non-zero at start) they are reported unavailable.
  spindle = lambda do |engine, *flags|
    lambda do |l|
      workers = l.processes > 1 ? ["-w", l.processes.to_s] : []
      sized = engines.fetch(engine)[1] || l.scenario.threads&.key?(l.spec.name) # a scenario's own count applies
      threads = sized ? (engine == "hybrid" ? ["--loops", l.threads.to_s] : ["-t", l.thread_range]) : []
      [RbConfig.ruby, "bin/spindle", "--engine", engine, *threads, *workers, *flags,
       "-b", "tcp://#{l.address}", "-q", *l.scenario.server_args_for(l.spec.name), l.rackup]
    end
  end
  engines.each do |engine, (model, threaded, notes)|
    s.add "spindle-#{engine}", family: :spindle, runtime: :spindle, model: model, threaded: threaded,
                               command: spindle.call(engine), version: -> { Versions.spindle }, notes: notes,
                               ready_timeout: 120 # the first start may compile the C extension
  end

  # An engine again with something changed, as spindle-ENGINE+NAME.
  # Explicit: only the exact name in --servers runs one, so default runs and
  # spindle-* stay as they were.
  variant = lambda do |engine, name, command, notes|
    model, threaded, = engines.fetch(engine)
    s.add "spindle-#{engine}+#{name}", family: :spindle, runtime: :spindle, model: model, threaded: threaded,
                                       command: command, version: -> { Versions.spindle }, notes: notes,
                                       explicit: true, ready_timeout: 120
  end

  # The threaded engines with --cpu-affinity (docs/ENGINES.md), in each mode:
  # +cpu-affinity pins the whole process, +cpu-affinity-app the threads that
  # run the app.
  { "" => ["--cpu-affinity", "each process and its threads on one CPU"],
    "-app" => ["--cpu-affinity=app", "the threads that run the app on one CPU per process"] }.each do |suffix, (flag, what)|
    %w[threads hybrid].each { |engine| variant.call(engine, "cpu-affinity#{suffix}", spindle.call(engine, flag), "#{flag}: #{what}") }
  end

  # The threaded engines on Ruby 3.3's M:N threads (RUBY_MN_THREADS=1,
  # experimental in 3.3; Ruby 3.1 ignores it). They stalled `threads`
  # (docs/ENGINES.md).
  mn = ->(command) { ->(l) { ["env", "RUBY_MN_THREADS=1", *command.call(l)] } }
  %w[threads hybrid].each do |engine|
    variant.call(engine, "mn", mn.call(spindle.call(engine)), "RUBY_MN_THREADS=1: Ruby 3.3's M:N threads")
  end

  # Each engine on glibc's malloc, beside the default (jemalloc when
  # installed; docs/MEMORY.md).
  engines.each_key { |engine| variant.call(engine, "glibc", spindle.call(engine, "--allocator", "glibc"), "--allocator glibc") }

  # SPINDLE_BASELINE=REV (Bench::Baseline): each engine again, as committed
  # at REV. A peer in the reports, so "x Spindle best" compares against it.
  if (rev = Baseline.rev)
    root = nil
    engines.each do |engine, (model, threaded, _notes)|
      s.add "spindle-#{engine}@#{rev}", family: :peer, runtime: :spindle, model: model, threaded: threaded,
                                        root: -> { root ||= Baseline.checkout(rev) },
                                        command: spindle.call(engine), version: -> { "#{rev} (baseline)" },
                                        notes: "Spindle at #{rev} (SPINDLE_BASELINE)", ready_timeout: 120
    end
  end

  puma = lambda { |l|
    ["puma", "-q", "-t", l.thread_range, "-w", (l.processes > 1 ? l.processes : 0).to_s, "-b", "tcp://#{l.address}", l.rackup]
  }
  s.add "puma", family: :peer, runtime: :peers, model: "reactor + thread pool", threaded: true,
                version: -> { Versions.gem("puma") }, command: puma
  s.add "puma+mn", family: :peer, runtime: :peers, model: "reactor + thread pool", threaded: true,
                   version: -> { Versions.gem("puma") }, command: mn.call(puma),
                   notes: "RUBY_MN_THREADS=1: Ruby 3.3's M:N threads", explicit: true
  # Puma on the allocator Spindle picks by default when it is installed, so
  # that a ratio against Puma can be read without the allocator's share.
  s.add "puma-jemalloc", family: :peer, runtime: :peers, model: "reactor + thread pool", threaded: true,
                         version: -> { "#{Versions.gem('puma')} (#{Jemalloc::SETTINGS})" },
                         notes: "Puma with jemalloc preloaded, narenas:2: Spindle's allocator default",
                         command: ->(l) { [*Jemalloc.env, *puma.call(l)] }

  # --forked -n N: N worker processes under Falcon's supervisor. Falcon has no
  # thread count: each worker runs one fiber per connection.
  s.add "falcon", family: :peer, runtime: :peers, model: "fibers (async)",
                  version: -> { "#{Versions.gem("falcon")} (async #{Versions.gem("async")})" },
                  notes: "`falcon serve --forked -n N`: N workers under a supervisor; no thread setting",
                  command: lambda { |l|
                    ["falcon", "serve", "--bind", "http://#{l.address}", "--forked",
                     "-n", l.processes.to_s, "-c", l.rackup]
                  }

  # Unicorn and Pitchfork: single-threaded workers and no keep-alive (they
  # answer `Connection: close`), so wrk reconnects for every request.
  forking = lambda do |l|
    l.write("forking.rb", <<~RUBY)
      worker_processes #{l.processes}
      listen "#{l.address}", backlog: 1024
    RUBY
  end
  s.add "unicorn", family: :peer, runtime: :peers, model: "processes, no keep-alive",
                   version: -> { Versions.gem("unicorn") },
                   notes: "closes the connection after every response; wrk counts each close as a read error",
                   command: ->(l) { ["unicorn", "-c", forking.call(l), l.rackup] }
  s.add "pitchfork", family: :peer, runtime: :peers, model: "processes, no keep-alive",
                     version: -> { Versions.gem("pitchfork") },
                     notes: "closes the connection after every response",
                     command: ->(l) { ["pitchfork", "-c", forking.call(l), l.rackup] }

  s.add "iodine", family: :peer, runtime: :peers, model: "C event loop + thread pool", threaded: true,
                  version: -> { Versions.gem("iodine") },
                  command: lambda { |l|
                    ["iodine", "-b", l.host, "-p", l.port.to_s, "-t", l.threads.to_s,
                     "-w", l.processes.to_s, *l.scenario.server_args_for(l.spec.name), l.rackup]
                  }

  # Started through its Ruby API: the agoo executable drops the thread count
  # for .ru files (see launchers/agoo.rb).
  s.add "agoo", family: :peer, runtime: :peers, model: "C event loop + thread pool", threaded: true,
                version: -> { Versions.gem("agoo") },
                notes: "default poll_timeout 0.1 s: requests can wait that long for a handler thread (see p99)",
                command: lambda { |l|
                  ["ruby", File.join(Paths::BENCH, "launchers", "agoo.rb"), l.port.to_s,
                   l.threads.to_s, l.processes.to_s, l.rackup]
                }

  # The physical ceiling: nginx answering from C with no Ruby at all.
  s.add "nginx", family: :ceiling, runtime: :system, model: "C event loop (ceiling)",
                 version: -> { Versions.command(%w[nginx -v], %r{nginx/(\S+)}) },
                 notes: "Debian nginx; config generated per launch in bench/tmp/",
                 command: lambda { |l|
                   config = l.write("nginx.conf", NginxConfig.render(l, l.scenario.nginx_location(l)))
                   ["nginx", "-c", config, "-e", File.join(l.dir, "error.log")]
                 }
end
