# frozen_string_literal: true

# Requests that outlive their --request-timeout in the ways an app does
# (test/integration/request_timeout_test.rb). Each waits far longer than the
# test's deadline, so no route's outcome hangs on a race with the clock.
require "json"
require "rack/utils"

DEADLINE = "spindle.deadline"

def ok(text) = [200, { "content-type" => "text/plain" }, [text]]

ROUTES = {
  # Routes that answer at once take a minute more, so that a loaded machine
  # never makes them late.
  "/ok" => lambda { |env, _q|
    env.fetch(DEADLINE).extend_by(60)
    ok("ok\n")
  },
  # Kernel#sleep, the fiber engines' scheduler wait; ensure leaves its mark.
  # flagged: sleeps until the watch flags the request (blocking, threads:
  # nothing cancels it), else far past the deadline.
  "/sleep" => lambda { |env, q|
    begin
      deadline = env.fetch(DEADLINE)
      q["flagged"] ? (sleep 0.01 until deadline.passed?) : sleep(30)
      ok("slept\n")
    ensure
      File.write(q["ensure"], "ran") if q["ensure"]
    end
  },
  # CPU-bound code that never waits: it ends once well past its deadline.
  "/spin" => lambda { |env, _q|
    deadline = env.fetch(DEADLINE)
    nil until deadline.remaining < -0.5
    ok("spun\n")
  },
  # CPU-bound until the test creates the release file (a cluster's stuck request).
  "/hold" => lambda { |_env, q|
    nil until File.exist?(q.fetch("release"))
    ok("held\n")
  },
  # A long request within its own, extended deadline: it waits for the
  # release file, and answers with its pid.
  "/wait" => lambda { |env, q|
    env.fetch(DEADLINE).extend_by(600)
    sleep 0.01 until File.exist?(q.fetch("release"))
    ok("#{Process.pid}\n")
  },
  # The app takes more time for itself, then waits past the first deadline.
  "/extend" => lambda { |env, _q|
    deadline = env.fetch(DEADLINE)
    deadline.extend_by(60)
    sleep 0.01 until deadline.remaining < 59 # well past the deadline it had
    ok("extended\n")
  },
  # What an app reads to pass the deadline on.
  "/deadline" => lambda { |env, _q|
    deadline = env.fetch(DEADLINE)
    ok(JSON.generate("remaining" => deadline.remaining, "at" => deadline.at, "seconds" => deadline.seconds))
  },
  # What the process holds: threads, and fibers still alive (a fiber a
  # cancelled request left behind would stay alive).
  "/census" => lambda { |env, _q|
    env.fetch(DEADLINE).extend_by(60)
    GC.start
    fibers = ObjectSpace.each_object(Fiber).count(&:alive?)
    ok(JSON.generate("threads" => Thread.list.map { |t| t.name || "unnamed" }.tally, "fibers" => fibers))
  },
}.freeze

app = lambda do |env|
  route = ROUTES.fetch(env["PATH_INFO"]) { return [404, { "content-type" => "text/plain" }, ["no route\n"]] }
  route.call(env, Rack::Utils.parse_query(env["QUERY_STRING"]))
end

run app
