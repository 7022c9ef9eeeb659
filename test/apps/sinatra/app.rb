# frozen_string_literal: true

require "sinatra/base"
require "rack/protection"
require "pg"
require "connection_pool"
require "socket"

# A small CRUD app over one PostgreSQL table (created by the test), with forms
# that carry rack-protection's authenticity token, a streamed response and a
# request that waits inside the database. DATABASE_URL names the database.
class ItemsApp < Sinatra::Base
  # Connections open lazily, so a cluster master that preloads the app holds
  # none and each forked worker opens its own.
  DB = ConnectionPool.new(size: Integer(ENV.fetch("DB_POOL", "10")), timeout: 10) do
    PG.connect(ENV.fetch("DATABASE_URL"))
  end

  # A fixed secret: every worker of a cluster must accept the others' session
  # cookies. A real app reads it from its secrets store.
  SESSION_SECRET = ENV.fetch("SESSION_SECRET") { "spindle-test-app-" * 4 }

  set :sessions, secret: SESSION_SECRET
  enable :method_override
  use Rack::Protection::AuthenticityToken

  helpers do
    def csrf_field
      token = Rack::Protection::AuthenticityToken.token(session)
      %(<input type="hidden" name="authenticity_token" value="#{Rack::Utils.escape_html(token)}">)
    end

    def query(sql, *params)
      DB.with { |db| db.exec_params(sql, params) }
    end
  end

  get "/items" do
    rows = query("select id, name from items order by id")
    items = rows.map { |r| %(<li id="item-#{r['id']}">#{Rack::Utils.escape_html(r['name'])}</li>) }.join
    %(<ul>#{items}</ul><form method="post" action="/items">#{csrf_field}<input name="name"></form>)
  end

  post "/items" do
    id = query("insert into items (name) values ($1) returning id", params.fetch("name")).getvalue(0, 0)
    redirect "/items/#{id}", 303
  end

  get "/items/:id" do
    row = query("select name from items where id = $1", params[:id]).first or halt 404
    %(<h1>#{Rack::Utils.escape_html(row['name'])}</h1>) +
      %(<form method="post" action="/items/#{params[:id]}">#{csrf_field}) +
      %(<input type="hidden" name="_method" value="put"><input name="name"></form>)
  end

  put "/items/:id" do
    updated = query("update items set name = $1 where id = $2", params.fetch("name"), params[:id]).cmd_tuples
    halt 404 if updated.zero?
    redirect "/items/#{params[:id]}", 303
  end

  delete "/items/:id" do
    query("delete from items where id = $1", params[:id])
    redirect "/items", 303
  end

  # Two parts, with a stop at the test's rendezvous between them: the test sees
  # the first part before it lets the app write the second.
  get "/stream" do
    path = params.fetch("rendezvous")
    stream do |out|
      out << "first part\n"
      UNIXSocket.open(path) do |socket|
        socket.write("streaming\r\n")
        socket.gets
      end
      out << "second part\n"
    end
  end

  # Waits in the database for a shared advisory lock the test holds exclusively.
  get "/wait" do
    key = Integer(params.fetch("key"))
    DB.with do |db|
      db.exec_params("select pg_advisory_lock_shared($1)", [key])
      db.exec_params("select pg_advisory_unlock_shared($1)", [key])
    end
    "waited\n"
  end
end
