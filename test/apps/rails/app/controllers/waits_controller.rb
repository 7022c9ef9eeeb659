# frozen_string_literal: true

# GET /wait?key=N takes a shared advisory lock the test holds exclusively, so
# the request waits inside PostgreSQL until the test lets go. The test counts
# the waiting backends: on the fibers engine all of them wait at once.
class WaitsController < ApplicationController
  def show
    key = Integer(params.require(:key))
    ActiveRecord::Base.with_connection do |db|
      db.select_value("select pg_advisory_lock_shared(#{key})")
      db.select_value("select pg_advisory_unlock_shared(#{key})")
    end
    render plain: "waited\n"
  end
end
