# frozen_string_literal: true

require_relative "../test_helper"

# Env keys of field names. The parser knows the names most requests carry and
# their keys in advance (known_fields in ext/spindle/spindle_http.c); every
# other name is built and interned. Both ways must give the same key, one
# shared frozen String per name, whatever the name's case, and a name near a
# known one must not be taken for it.
class ParserFieldNamesTest < Minitest::Test
  KNOWN = %w[Host User-Agent Accept Accept-Encoding Accept-Language Cookie Referer Cache-Control
             Origin Authorization If-None-Match X-Forwarded-For X-Request-Id Sec-Fetch-Mode Sec-CH-UA DNT TE].freeze

  def test_known_names_in_any_case_give_the_built_key
    KNOWN.each do |name|
      expected = "HTTP_#{name.upcase.tr('-', '_')}"
      [name, name.downcase, name.upcase, name.swapcase].each do |spelling|
        key = key_for(spelling)
        assert_equal expected, key, spelling
        assert_same(-expected, key, "#{spelling}: the interned key, one object for every request")
      end
    end
  end

  def test_content_fields_take_their_cgi_names
    assert_equal %w[CONTENT_TYPE CONTENT_LENGTH],
                 [key_for("content-TYPE", "text/plain"), key_for("Content-Length", "0", method: "POST")]
  end

  # A known name's prefix, a longer name it begins, a name one byte off at
  # either end: other names, with keys of their own.
  def test_names_near_known_ones_are_their_own
    { "Hosu" => "HTTP_HOSU", "Host2" => "HTTP_HOST2", "Hos" => "HTTP_HOS", "X-Real-Iq" => "HTTP_X_REAL_IQ",
      "Zost" => "HTTP_ZOST", "Accep~" => "HTTP_ACCEP~", "Tee" => "HTTP_TEE" }.each do |name, expected|
      assert_equal expected, key_for(name), name
    end
  end

  def test_proxy_is_still_dropped
    env = parse("GET / HTTP/1.1\r\nHost: a\r\nProxy: http://evil\r\n\r\n")
    refute env.key?("HTTP_PROXY")
  end

  private

  # The env key the field name got: the one key besides the head's.
  def key_for(name, value = "v", method: "GET")
    host = name.casecmp?("host") ? "" : "Host: a\r\n"
    env = parse("#{method} / HTTP/1.1\r\n#{host}#{name}: #{value}\r\n\r\n")
    keys = env.keys - %w[REQUEST_METHOD REQUEST_URI PATH_INFO QUERY_STRING SERVER_PROTOCOL SERVER_NAME SERVER_PORT]
    keys -= ["HTTP_HOST"] unless host.empty?
    assert_equal 1, keys.size, "#{name}: #{keys.inspect}"
    keys.first
  end

  def parse(text)
    parser = Spindle::HTTP::Parser.new
    bytes = text.b
    offset = 0
    offset = parser.execute(bytes, offset, +"") until parser.done?
    parser.env
  end
end
