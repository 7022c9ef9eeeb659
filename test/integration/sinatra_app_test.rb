# frozen_string_literal: true

require_relative "../support/app_server"

# test/apps/sinatra, a Sinatra 4 app with its own Gemfile, on PostgreSQL:
# served on every engine and as a cluster, it creates, lists, updates and
# deletes rows through its forms with rack-protection's authenticity token,
# streams a response in parts, and (on the fiber engines) waits in the
# database for several requests at once.
module SinatraAppContract
  APP = "sinatra"
  WAITERS = 5

  class << self
    # One database for the whole file, with the app's table.
    def database_url
      @database_url ||= AppServer.create_database("spindle_sinatra").tap do |url|
        db = PG.connect(url)
        db.exec("create table items (id serial primary key, name text not null)")
        db.close
      end
    end
  end

  def self.included(base)
    base.extend(ClassMethods)
  end

  # One server per class, booted on first use and killed at exit.
  module ClassMethods
    def app_server
      @app_server = nil if @app_server && !@app_server.alive?
      @app_server ||= start_app
    end

    def application_name = "spindle-sinatra-#{name}"

    private

    def start_app
      url = "#{SinatraAppContract.database_url}&application_name=#{application_name}"
      options = AppServer.spawn_options(APP, "DATABASE_URL" => url, "DB_POOL" => WAITERS.to_s,
                                                   "RACK_ENV" => "production")
      args = ["-b", SpindleIntegrationTest::LOOPBACK, *server_flags]
      return CommandProcess.start(%w[bundle exec spindle], *args, **options) if bundle_exec?

      SpindleProcess.start(*args, "config.ru", **options)
    end
  end

  def app = self.class.app_server

  def test_crud_through_forms_with_the_authenticity_token
    client = FormClient.new(app)
    token = FormClient.hidden_fields(client.get("/items").body, "/items").fetch("authenticity_token")
    assert_equal 403, client.post("/items", "name" => "forged").status, "a post without the token is refused"

    created = client.post("/items", "authenticity_token" => token, "name" => "first #{name}")
    assert_equal 303, created.status, created.to_s
    item = FormClient.location_path(created)
    shown = client.get(item)
    assert_includes shown.body, "first #{name}"

    fields = FormClient.hidden_fields(shown.body, item)
    assert_equal "put", fields["_method"]
    assert_equal 303, client.post(item, fields.merge("name" => "renamed #{name}")).status
    assert_includes client.get("/items").body, "renamed #{name}"

    assert_equal 303, client.post(item, "_method" => "delete", "authenticity_token" => token).status
    refute_includes client.get("/items").body, "renamed #{name}"
    assert_equal 404, client.get(item).status
  end

  def test_a_streamed_response_arrives_in_parts
    point = rendezvous
    connection = connect(app)
    connection.write(request("GET", "/stream?rendezvous=#{point.path}", [["Connection", "close"]]))
    head = connection.read_head
    assert_equal 200, head.status
    assert_equal "first part\n", connection.read_chunk, "the first part arrives before the app writes the second"
    point.await("streaming").release
    assert_equal "second part\n", connection.read_chunk
    assert_nil connection.read_chunk
  end
end

# The fiber engines: WAITERS requests each wait in PostgreSQL for a lock the
# test holds, and the test sees all of them waiting at once (one process, one
# thread for fibers): a server that ran them one by one would never get there.
module SinatraOverlapContract
  include DatabaseWaiters

  def test_requests_wait_in_the_database_at_once
    assert_requests_wait_at_once(app, SinatraAppContract.database_url, self.class.application_name,
                                 SinatraAppContract::WAITERS)
  end
end

AppServer.define_tests("Sinatra", SinatraAppContract, SinatraOverlapContract)
