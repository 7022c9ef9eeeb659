# frozen_string_literal: true

require_relative "../test_helper"

# Parser#env_template= (docs/PARSER.md): each request's env starts as a copy
# of the template, made in C when the request's first field (or its head's
# end) is parsed. Connection sets it once per connection; the handler and the
# PROXY protocol add to the template afterwards, so the copy is of the
# template as it is at each request, never as it was when set.
class ParserEnvTemplateTest < Minitest::Test
  GET = "GET /a HTTP/1.1\r\nHost: example.com\r\n\r\n".b
  BARE = "GET /b HTTP/1.0\r\n\r\n".b # no field: the env is made at the head's end

  def setup
    @template = { "rack.url_scheme" => "http", "REMOTE_ADDR" => "10.0.0.1", "SERVER_NAME" => "listener" }
    @parser = Spindle::HTTP::Parser.new
    @parser.env_template = @template
  end

  def test_the_env_is_the_template_and_the_request
    env = parse(GET)
    assert_equal %w[http 10.0.0.1 /a example.com], env.values_at("rack.url_scheme", "REMOTE_ADDR", "PATH_INFO", "HTTP_HOST")
    assert_equal "example.com", env["SERVER_NAME"], "the request's host wins over the template's"
    assert_equal %w[http 10.0.0.1 /b], parse(BARE).values_at("rack.url_scheme", "REMOTE_ADDR", "PATH_INFO")
  end

  def test_each_request_gets_its_own_copy_and_the_template_is_untouched
    before = @template.dup
    first = parse(GET)
    first["app.key"] = 1
    second = parse(GET)

    refute_same first, second
    refute second.key?("app.key"), "what an app adds to one env is not in the next"
    assert_equal before, @template, "parsing never writes to the template"
  end

  def test_a_change_to_the_template_shows_in_the_next_request
    parse(GET)
    @template["REMOTE_ADDR"] = "192.0.2.7" # as a PROXY protocol header does
    assert_equal "192.0.2.7", parse(GET)["REMOTE_ADDR"]
  end

  def test_without_a_template_the_env_holds_the_request_only
    @parser.env_template = nil
    assert_equal %w[/a example.com], parse(GET).values_at("PATH_INFO", "HTTP_HOST")
    refute parse(GET).key?("REMOTE_ADDR")
  end

  # Handler#env_template starts from one, so the copies have room to grow.
  def test_sized_hash_is_an_empty_hash
    hash = Spindle::HTTP::Parser.sized_hash(32)
    assert_equal({}, hash)
    hash.update("a" => 1)
    assert_equal({ "a" => 1 }, hash)
    assert_raises(ArgumentError) { Spindle::HTTP::Parser.sized_hash(-1) }
  end

  def test_a_template_must_be_a_hash
    assert_raises(TypeError) { @parser.env_template = [%w[a b]] }
  end

  private

  def parse(bytes)
    @parser.reset
    offset = 0
    offset = @parser.execute(bytes, offset, +"") until @parser.done?
    @parser.env
  end
end
