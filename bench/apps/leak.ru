# frozen_string_literal: true

# Scenario "leak": one app, three modes (LEAK_MODE):
#   hello       the hello app: nothing per request but the response
#   extend      the seed's control (shared seed 000): every request extends its
#               env Hash with a module (`conn.extend HttpHandler` in the seed),
#               giving the object a singleton class
#   extend_new  `Object.new.extend(Module.new)` per request: a new module and a
#               new singleton class every time
# GET /vmstat answers RubyVM.stat and a few GC.stat figures as JSON (without
# extending anything), so the harness can read class_serial at start and end.
require "json"

MODE = ENV.fetch("LEAK_MODE", "hello")
module LeakHandler
  def handled? = true
end

run lambda { |env|
  if env["PATH_INFO"] == "/vmstat"
    gc = GC.stat
    body = JSON.generate(pid: Process.pid, vm: RubyVM.stat,
                         gc: gc.slice(:count, :major_gc_count, :heap_live_slots, :heap_allocated_pages, :total_allocated_objects))
    return [200, { "content-type" => "application/json" }, [body]]
  end

  case MODE
  when "extend" then env.extend(LeakHandler)
  when "extend_new" then Object.new.extend(Module.new)
  end
  [200, { "content-type" => "text/plain" }, ["Hello World"]]
}
