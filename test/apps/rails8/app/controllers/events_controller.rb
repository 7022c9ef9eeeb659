# Server-sent events through ActionController::Live. Between its two events
# the stream waits in PostgreSQL for an advisory lock the suite holds
# (?key=K): the suite reads the first event while the second cannot have been
# written yet, so a server that buffered the response would never show it.
class EventsController < ApplicationController
  include ActionController::Live

  def index
    response.headers["Content-Type"] = "text/event-stream"
    sse = SSE.new(response.stream, event: "tick")
    sse.write({ "n" => 1, "worker" => Process.pid }, id: 1)
    wait_for_lock(Integer(params.expect(:key)))
    sse.write({ "n" => 2 }, id: 2)
  ensure
    sse&.close
  end

  private

  def wait_for_lock(key)
    ActiveRecord::Base.connection_pool.with_connection do |connection|
      connection.select_value("select pg_advisory_lock_shared(#{key})")
      connection.select_value("select pg_advisory_unlock_shared(#{key})")
    end
  end
end
