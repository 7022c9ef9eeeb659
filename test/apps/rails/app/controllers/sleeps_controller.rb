# frozen_string_literal: true

# GET /sleep?seconds=N: one pg_sleep on a pooled ActiveRecord connection.
# Under --request-timeout on a fiber engine, Spindle::RequestTimeout may
# interrupt the query at its wait: the query still runs in PostgreSQL and the
# connection is busy, and ActiveRecord (which rescues only StandardError
# around a query) would hand it back to the pool so. #settling cancels the
# query and takes its result first (docs/DEADLINES.md).
class SleepsController < ApplicationController
  def show
    seconds = Float(params.fetch(:seconds, "1"))
    ActiveRecord::Base.with_connection do |db|
      settling(db) { db.select_value("select pg_sleep(#{seconds})") }
    end
    render plain: "slept\n"
  end

  private

  def settling(db)
    yield
  rescue Exception # rubocop:disable Lint/RescueException -- Spindle::RequestTimeout is one
    raw = db.raw_connection
    if raw.transaction_status == PG::PQTRANS_ACTIVE
      raw.cancel
      raw.reset unless raw.discard_results
    end
    raise
  end
end
