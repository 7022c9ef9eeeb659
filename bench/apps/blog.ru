# frozen_string_literal: true

# Scenario "blog" (issue 16): a Rack app with no framework, the page the
# seed's Unicycle served at 1,296 req/s in 2009. Each request runs one
# PostgreSQL query for the 10 newest posts, then renders an ERB page of about
# 15 KB. The posts are the Rails app's (bench/lib/bench/app_db.rb seeds them).
#
# The database goes through examples/postgres/db.rb: a connection_pool of
# DB_POOL pg connections, checked out per thread or per fiber (Thread#[] is
# fiber-local), and pg >= 1.3 waits through IO#wait_readable, so under a
# fiber scheduler (Spindle's fibers and hybrid engines, Falcon) a query
# yields its fiber instead of blocking the loop.
require "erb"
require_relative "../../examples/postgres/db"

# The template, compiled once into a method at boot: rendering is then a
# method call, as in any framework that caches its templates.
class BlogPage
  QUERY = "select id, title, body, created_at from posts order by id desc limit 10"

  include ERB::Util
  ERB.new(File.read(File.join(__dir__, "blog.html.erb")), trim_mode: "-")
     .def_method(self, "render(posts)", "blog.html.erb")

  def call(_env)
    html = render(DB.query(QUERY))
    [200, { "content-type" => "text/html; charset=utf-8", "content-length" => html.bytesize.to_s }, [html]]
  end
end

run BlogPage.new
