# frozen_string_literal: true

require_relative "../test_helper"

# One group of tests per parser row of ../shared/BAD_INPUTS.md. Every vector is
# parsed whole, one byte at a time and split at every offset, and must be
# refused with the same status each time: a verdict that depends on how the
# bytes arrive is a smuggling vector of its own.
class ParserBadInputsTest < Minitest::Test
  include ParserHelpers
  W = ParserHelpers::Wire

  # Defines one test per [name, bytes, status, limits] vector.
  def self.refuses(row, vectors)
    vectors.each do |name, bytes, status, limits|
      test_name = "test_#{row}: #{name}"
      raise ArgumentError, "duplicate vector #{test_name}" if method_defined?(test_name)

      define_method(test_name) { assert_refused(bytes, status, **(limits || {})) }
    end
  end

  HELLO = "hello"
  CHUNK_END = "0\r\n\r\n"
  # The first bytes of a TLS 1.2 ClientHello, as sent to a plain-text port.
  CLIENT_HELLO = ("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03".b + ("\xa7".b * 32) + "\x20".b +
                  ("\x5c".b * 32) + "\x00\x3e\x13\x02\x13\x03\x13\x01\xc0\x2c\xc0\x30".b).freeze

  refuses "content_length_not_plain_decimal", [
    ["empty", W.post("Content-Length: ", body: HELLO), 400],
    ["plus sign", W.post("Content-Length: +5", body: HELLO), 400],
    ["minus sign", W.post("Content-Length: -1", body: HELLO), 400],
    ["decimal point", W.post("Content-Length: 5.0", body: HELLO), 400],
    ["hex prefix", W.post("Content-Length: 0x10", body: HELLO), 400],
    ["exponent", W.post("Content-Length: 1e3", body: HELLO), 400],
    ["digits then letter", W.post("Content-Length: 5a", body: HELLO), 400],
    ["digit separator", W.post("Content-Length: 1_0", body: HELLO), 400],
    ["two numbers", W.post("Content-Length: 5 5", body: HELLO), 400],
    ["list of equal values", W.post("Content-Length: 5, 5", body: HELLO), 400],
    ["trailing comma", W.post("Content-Length: 5,", body: HELLO), 400],
    ["19 digits", W.post("Content-Length: 1000000000000000000", body: HELLO), 400],
    ["30 digits", W.post("Content-Length: 123456789012345678901234567890", body: HELLO), 400],
    ["2**64 wraps to 0", W.post("Content-Length: 18446744073709551616", body: HELLO), 400],
    ["2**64+5 wraps to 5", W.post("Content-Length: 18446744073709551621", body: HELLO), 400],
    ["arabic-indic digit", W.post("Content-Length: \xD9\xA5".b, body: HELLO), 400],
    ["fullwidth digit", W.post("Content-Length: \xEF\xBC\x95".b, body: HELLO), 400],
    ["nbsp before digits", W.post("Content-Length: \xA05".b, body: HELLO), 400],
    ["vertical tab before digits", W.post("Content-Length: \x0b5", body: HELLO), 400],
    ["NUL after digits", W.post("Content-Length: 5\x00", body: HELLO), 400]
  ]

  refuses "two_content_length_fields", [
    ["1 then 0", W.post("Content-Length: 1", "Content-Length: 0", body: HELLO), 400],
    ["0 then 5", W.post("Content-Length: 0", "Content-Length: 5", body: HELLO), 400],
    ["equal values", W.post("Content-Length: 5", "Content-Length: 5", body: HELLO), 400],
    ["names in different case", W.post("content-length: 5", "CONTENT-LENGTH: 5", body: HELLO), 400],
    ["apart from each other", W.post("Content-Length: 5", "X-A: b", "Content-Length: 3", body: HELLO), 400]
  ]

  CHUNKED_HELLO = "5\r\nhello\r\n0\r\n\r\n"
  refuses "transfer_encoding_with_content_length", [
    ["TE then CL", W.post("Transfer-Encoding: chunked", "Content-Length: 5", body: CHUNKED_HELLO), 400],
    ["CL then TE", W.post("Content-Length: 5", "Transfer-Encoding: chunked", body: CHUNKED_HELLO), 400],
    ["CL 0 with TE", W.post("Content-Length: 0", "Transfer-Encoding: chunked", body: CHUNKED_HELLO), 400],
    ["lower-case names", W.post("transfer-encoding: chunked", "content-length: 5", body: CHUNKED_HELLO), 400],
    ["coding in other case", W.post("Transfer-Encoding: Chunked", "Content-Length: 5", body: CHUNKED_HELLO), 400]
  ]

  refuses "transfer_encoding_in_http10", [
    ["chunked", W.request("POST / HTTP/1.0", "Transfer-Encoding: chunked", body: CHUNKED_HELLO), 400],
    ["with Host", W.request("POST / HTTP/1.0", "Host: a", "Transfer-Encoding: chunked", body: CHUNKED_HELLO), 400],
    ["with keep-alive", W.request("POST / HTTP/1.0", "Connection: keep-alive", "Transfer-Encoding: chunked",
                                  body: CHUNKED_HELLO), 400],
    ["lower-case name", W.request("POST / HTTP/1.0", "transfer-encoding: chunked", body: CHUNKED_HELLO), 400]
  ]

  refuses "codings_other_than_single_final_chunked", [
    ["gzip", W.post("Transfer-Encoding: gzip", body: CHUNK_END), 501],
    ["deflate", W.post("Transfer-Encoding: deflate", body: CHUNK_END), 501],
    ["identity", W.post("Transfer-Encoding: identity", body: CHUNK_END), 501],
    ["unknown token like chunked", W.post("Transfer-Encoding: xchunked", body: CHUNK_END), 501],
    ["gzip before chunked", W.post("Transfer-Encoding: gzip, chunked", body: CHUNK_END), 501],
    ["gzip then chunked in two fields", W.post("Transfer-Encoding: gzip", "Transfer-Encoding: chunked",
                                               body: CHUNK_END), 501],
    ["chunked before gzip", W.post("Transfer-Encoding: chunked, gzip", body: CHUNK_END), 400],
    ["chunked then gzip in two fields", W.post("Transfer-Encoding: chunked", "Transfer-Encoding: gzip",
                                               body: CHUNK_END), 400],
    ["chunked twice", W.post("Transfer-Encoding: chunked, chunked", body: CHUNK_END), 400],
    ["chunked twice in two fields", W.post("Transfer-Encoding: chunked", "Transfer-Encoding: chunked",
                                           body: CHUNK_END), 400],
    ["empty", W.post("Transfer-Encoding: ", body: CHUNK_END), 400],
    # Empty list elements are ignored (RFC 9110 §5.6.1.2; chunked with them is
    # in parser_valid_test.rb), but a list of nothing else names no coding,
    # and a field line of nothing else is refused even beside a chunked one:
    # a hop that kept only the last line would see no Transfer-Encoding.
    ["only empty elements", W.post("Transfer-Encoding: , ,", body: CHUNK_END), 400],
    ["an empty line after chunked", W.post("Transfer-Encoding: chunked", "Transfer-Encoding: ,",
                                           body: CHUNK_END), 400],
    ["an empty line before chunked", W.post("Transfer-Encoding: ", "Transfer-Encoding: chunked",
                                            body: CHUNK_END), 400],
    ["empty elements do not hide gzip", W.post("Transfer-Encoding: gzip, , chunked", body: CHUNK_END), 501],
    ["empty elements do not hide chunked before gzip", W.post("Transfer-Encoding: chunked, , gzip",
                                                              body: CHUNK_END), 400],
    ["empty elements do not hide chunked twice", W.post("Transfer-Encoding: chunked,,chunked", body: CHUNK_END), 400],
    ["empty elements with Content-Length", W.post("Transfer-Encoding: , chunked", "Content-Length: 5",
                                                  body: CHUNK_END), 400],
    ["empty elements in HTTP/1.0", W.request("POST / HTTP/1.0", "Transfer-Encoding: , chunked",
                                             body: CHUNK_END), 400],
    ["space-separated list", W.post("Transfer-Encoding: gzip chunked", body: CHUNK_END), 400],
    ["quoted coding", W.post("Transfer-Encoding: \"chunked\"", body: CHUNK_END), 400]
  ]

  refuses "obfuscated_header_names", [
    ["space before colon in TE", W.post("Transfer-Encoding : chunked", body: CHUNK_END), 400],
    ["tab before colon in TE", W.post("Transfer-Encoding\t: chunked", body: CHUNK_END), 400],
    ["space before colon in CL", W.post("Content-Length : 5", body: HELLO), 400],
    ["nbsp before colon in TE", W.post("Transfer-Encoding\xA0: chunked".b, body: CHUNK_END), 400],
    ["space on first field line", W.request("POST / HTTP/1.1", " Transfer-Encoding: chunked", "Host: a",
                                            body: CHUNK_END), 400],
    ["tab on first field line", W.request("GET / HTTP/1.1", "\tHost: a"), 400],
    ["vertical tab before coding", W.post("Transfer-Encoding: \x0bchunked", body: CHUNK_END), 400],
    ["vertical tab after coding", W.post("Transfer-Encoding: chunked\x0b", body: CHUNK_END), 400],
    ["form feed before coding", W.post("Transfer-Encoding: \x0cchunked", body: CHUNK_END), 400],
    ["nbsp before coding", W.post("Transfer-Encoding: \xA0chunked".b, body: CHUNK_END), 400],
    ["nbsp after coding", W.post("Transfer-Encoding: chunked\xA0".b, body: CHUNK_END), 400],
    ["vertical tab before length", W.post("Content-Length: 5\x0b", body: HELLO), 400]
  ]

  refuses "bad_chunk_size", [
    ["0x prefix", W.chunked("0x5\r\nhello\r\n0\r\n\r\n"), 400],
    ["0X prefix", W.chunked("0X5\r\nhello\r\n0\r\n\r\n"), 400],
    ["plus sign", W.chunked("+5\r\nhello\r\n0\r\n\r\n"), 400],
    ["minus sign", W.chunked("-5\r\nhello\r\n0\r\n\r\n"), 400],
    ["leading space", W.chunked(" 5\r\nhello\r\n0\r\n\r\n"), 400],
    ["trailing space", W.chunked("5 \r\nhello\r\n0\r\n\r\n"), 400],
    ["leading tab", W.chunked("\t5\r\nhello\r\n0\r\n\r\n"), 400],
    ["empty size line", W.chunked("\r\nhello\r\n0\r\n\r\n"), 400],
    ["not hex", W.chunked("g\r\nhello\r\n0\r\n\r\n"), 400],
    ["digit separator", W.chunked("0_5\r\nhello\r\n0\r\n\r\n"), 400],
    ["NUL after size", W.chunked("5\x00\r\nhello\r\n0\r\n\r\n"), 400],
    ["size ended by bare LF", W.chunked("5\nhello\r\n0\r\n\r\n"), 400],
    ["size ended by bare CR", W.chunked("5\rhello\r\n0\r\n\r\n"), 400],
    ["16 hex digits", W.chunked("0000000000000005\r\nhello\r\n0\r\n\r\n"), 400],
    ["16 f digits", W.chunked("ffffffffffffffff\r\nhello\r\n0\r\n\r\n"), 400],
    ["2**64+5 wraps to 5", W.chunked("10000000000000005\r\nhello\r\n0\r\n\r\n"), 400],
    ["40 hex digits", W.chunked("#{'f' * 40}\r\nhello\r\n0\r\n\r\n"), 400]
  ]

  refuses "chunk_data_not_matching_size", [
    ["data longer than size", W.chunked("4\r\nWorld\r\n0\r\n\r\n"), 400],
    ["data shorter than size", W.chunked("6\r\nWorld\r\n0\r\n\r\n"), 400],
    ["data ended by bare LF", W.chunked("5\r\nWorld\n0\r\n\r\n"), 400],
    ["data ended by bare CR", W.chunked("5\r\nWorld\r0\r\n\r\n"), 400],
    ["data ended by XX", W.chunked("5\r\nWorldXX0\r\n\r\n"), 400],
    ["data not ended", W.chunked("5\r\nWorld0\r\n\r\n"), 400],
    ["last chunk ended by bare LF", W.chunked("5\r\nWorld\r\n0\n\r\n"), 400],
    ["message ended by bare LF", W.chunked("5\r\nWorld\r\n0\r\n\n"), 400],
    ["message ended by bare CR", W.chunked("5\r\nWorld\r\n0\r\n\rX"), 400],
    ["data after last chunk", W.chunked("0\r\nWorld\r\n\r\n"), 400]
  ]

  refuses "chunk_extensions_abused", [
    ["bare CR inside", W.chunked("5;a\rb\r\nhello\r\n0\r\n\r\n"), 400],
    ["bare LF inside", W.chunked("5;a\nb\r\nhello\r\n0\r\n\r\n"), 400],
    ["ended by bare LF", W.chunked("5;a\nhello\r\n0\r\n\r\n"), 400],
    ["unbalanced quote", W.chunked("5;a=\"x\r\nhello\r\n0\r\n\r\n"), 400],
    ["CRLF inside quotes", W.chunked("5;a=\"x\r\ny\"\r\nhello\r\n0\r\n\r\n"), 400],
    ["escaped CR inside quotes", W.chunked("5;a=\"x\\\r\"\r\nhello\r\n0\r\n\r\n"), 400],
    ["NUL inside quotes", W.chunked("5;a=\"\x00\"\r\nhello\r\n0\r\n\r\n"), 400],
    ["NUL in name", W.chunked("5;a\x00\r\nhello\r\n0\r\n\r\n"), 400],
    ["empty extension", W.chunked("5;\r\nhello\r\n0\r\n\r\n"), 400],
    ["empty name", W.chunked("5;=v\r\nhello\r\n0\r\n\r\n"), 400],
    ["empty name between semicolons", W.chunked("5;;a\r\nhello\r\n0\r\n\r\n"), 400],
    ["empty value", W.chunked("5;a=\r\nhello\r\n0\r\n\r\n"), 400],
    ["name not a token", W.chunked("5;a@b\r\nhello\r\n0\r\n\r\n"), 400],
    ["space inside value", W.chunked("5;a=b c\r\nhello\r\n0\r\n\r\n"), 400],
    ["over max_chunk_ext", W.chunked("5;#{'a' * 40}\r\nhello\r\n0\r\n\r\n"), 400, { max_chunk_ext: 16 }],
    ["never ends, over max_chunk_ext", W.chunked("5;#{'a' * 100}"), 400, { max_chunk_ext: 16 }],
    ["quoted, over max_chunk_ext", W.chunked("5;a=\"#{'q' * 40}\"\r\nhello\r\n0\r\n\r\n"), 400, { max_chunk_ext: 16 }],
    ["kilobytes, default max_chunk_ext", W.chunked("5;#{'a' * 2000}\r\nhello\r\n0\r\n\r\n"), 400],
    ["over max_chunk_ext_total", W.chunked("#{"1;abcdefgh\r\nx\r\n" * 8}0\r\n\r\n"), 400,
     { max_chunk_ext_total: 32 }]
  ]

  refuses "trailers", [
    ["section never ends, over max_trailer", W.chunked("0\r\n#{"X-T: v\r\n" * 20}"), 431, { max_trailer: 64 }],
    ["one line never ends, over max_trailer", W.chunked("0\r\nX-T: #{'v' * 200}"), 431, { max_trailer: 64 }],
    ["over max_trailer", W.chunked("0\r\n#{"X-T: v\r\n" * 20}\r\n"), 431, { max_trailer: 64 }],
    ["over default max_trailer", W.chunked("0\r\nX-T: #{'v' * 9000}\r\n\r\n"), 431],
    ["space before colon", W.chunked("0\r\nX-T : v\r\n\r\n"), 400],
    ["no colon", W.chunked("0\r\nX-T\r\n\r\n"), 400],
    ["NUL in value", W.chunked("0\r\nX-T: a\x00b\r\n\r\n"), 400],
    ["obs-fold", W.chunked("0\r\nX-T: a\r\n b\r\n\r\n"), 400],
    ["bare LF between fields", W.chunked("0\r\nX-T: a\nX-U: b\r\n\r\n"), 400]
  ]

  refuses "bare_lf_or_cr_in_head", [
    ["LF after request line", "GET / HTTP/1.1\nHost: a\r\n\r\n".b, 400],
    ["LF between fields", "GET / HTTP/1.1\r\nHost: a\nX: b\r\n\r\n".b, 400],
    ["LF ends head", "GET / HTTP/1.1\r\nHost: a\r\n\n".b, 400],
    ["LF then CRLF ends head", "GET / HTTP/1.1\r\nHost: a\n\r\n".b, 400],
    ["LF only", "GET / HTTP/1.1\nHost: a\n\n".b, 400],
    ["CR between fields", "GET / HTTP/1.1\r\nHost: a\rX: b\r\n\r\n".b, 400],
    ["CR inside value", W.get("X: a\rb"), 400],
    ["CR inside target", "GET /\r HTTP/1.1\r\nHost: a\r\n\r\n".b, 400],
    ["CR CR LF", "GET / HTTP/1.1\r\r\nHost: a\r\n\r\n".b, 400],
    ["CR then junk ends head", "GET / HTTP/1.1\r\nHost: a\r\n\rX".b, 400],
    ["leading bare LF", "\nGET / HTTP/1.1\r\nHost: a\r\n\r\n".b, 400],
    ["leading bare CR", "\rGET / HTTP/1.1\r\nHost: a\r\n\r\n".b, 400]
  ]

  refuses "controls_in_field_value", [
    ["NUL inside", W.get("X: a\x00b"), 400],
    ["NUL at end", W.get("X: a\x00"), 400],
    ["NUL in Host", W.request("GET / HTTP/1.1", "Host: a\x00.evil.test"), 400],
    ["SOH", W.get("X: a\x01b"), 400],
    ["backspace", W.get("X: a\x08b"), 400],
    ["vertical tab", W.get("X: a\x0bb"), 400],
    ["form feed", W.get("X: a\x0cb"), 400],
    ["ESC", W.get("X: a\x1b[2Jb"), 400],
    ["unit separator", W.get("X: a\x1fb"), 400],
    ["DEL", W.get("X: a\x7fb"), 400]
  ]

  refuses "invalid_field_names", [
    ["empty name", W.get(": v"), 400],
    ["space inside", W.get("X Y: v"), 400],
    ["space before colon", W.get("X : v"), 400],
    ["tab before colon", W.get("X\t: v"), 400],
    ["no colon", W.get("NoColon"), 400],
    ["parenthesis", W.get("X(: v"), 400],
    ["at sign", W.get("X@Y: v"), 400],
    ["slash", W.get("X/Y: v"), 400],
    ["double quote", W.get("X\"Y: v"), 400],
    ["braces", W.get("X{Y}: v"), 400],
    ["equals sign", W.get("X=Y: v"), 400],
    ["NUL", W.get("X\x00Y: v"), 400],
    ["DEL", W.get("X\x7f: v"), 400],
    ["non-ASCII", W.get("\xC3\xA9: v".b), 400]
  ]

  refuses "obs_fold", [
    ["space fold", W.get("X: a", " b"), 400],
    ["tab fold", W.get("X: a", "\tb"), 400],
    ["folded Host", W.request("GET / HTTP/1.1", "Host: a", " b"), 400],
    ["folded coding list", W.post("Transfer-Encoding: gzip", " , chunked", body: CHUNK_END), 400],
    ["whitespace-only continuation", W.get("X: a", " "), 400]
  ]

  refuses "request_line", [
    # A method is any token (RFC 9110 §9.1): these are the bytes a token has not.
    ["separator in method", W.request("G(T / HTTP/1.1", "Host: a"), 400],
    ["slash in method", W.request("G/T / HTTP/1.1", "Host: a"), 400],
    ["colon in method", W.request("GET: / HTTP/1.1", "Host: a"), 400],
    ["quote in method", W.request("\"GET\" / HTTP/1.1", "Host: a"), 400],
    ["non-ASCII in method", W.request("G\xC3\x89T / HTTP/1.1".b, "Host: a"), 400],
    ["method over 32 bytes", W.request("#{'M' * 33} / HTTP/1.1", "Host: a"), 400],
    ["empty method", W.request(" / HTTP/1.1", "Host: a"), 400],
    ["leading space", W.request(" GET / HTTP/1.1", "Host: a"), 400],
    ["two spaces after method", W.request("GET  / HTTP/1.1", "Host: a"), 400],
    ["two spaces before version", W.request("GET /  HTTP/1.1", "Host: a"), 400],
    ["tab as separator", W.request("GET\t/ HTTP/1.1", "Host: a"), 400],
    ["trailing space", W.request("GET / HTTP/1.1 ", "Host: a"), 400],
    ["no target", W.request("GET HTTP/1.1", "Host: a"), 400],
    ["no version (HTTP/0.9)", "GET /\r\n\r\n".b, 400],
    ["space inside target", W.request("GET /a b HTTP/1.1", "Host: a"), 400],
    ["NUL in target", W.request("GET /\x00 HTTP/1.1", "Host: a"), 400],
    ["SOH in target", W.request("GET /a\x01 HTTP/1.1", "Host: a"), 400],
    ["DEL in target", W.request("GET /a\x7f HTTP/1.1", "Host: a"), 400],
    ["non-ASCII in target", W.request("GET /caf\xC3\xA9 HTTP/1.1".b, "Host: a"), 400],
    ["fragment in target", W.request("GET /a#frag HTTP/1.1", "Host: a"), 400],
    ["relative target", W.request("GET a/b HTTP/1.1", "Host: a"), 400],
    ["ftp absolute form", W.request("GET ftp://a/ HTTP/1.1", "Host: a"), 400],
    # RFC 9110 §4.2.1: an http URI with an empty host MUST be rejected.
    ["absolute form, empty host", W.request("GET http:///x HTTP/1.1", "Host: a"), 400],
    # RFC 9110 §4.2.4: userinfo SHOULD be treated as an error; it disguises the authority.
    ["absolute form with userinfo", W.request("GET http://good.test@evil.test/ HTTP/1.1", "Host: a"), 400],
    ["asterisk for GET", W.request("GET * HTTP/1.1", "Host: a"), 400],
    ["asterisk for lower-case options", W.request("options * HTTP/1.1", "Host: a"), 400],
    ["authority form for lower-case connect", W.request("connect a.test:443 HTTP/1.1", "Host: a.test:443"), 400],
    ["version HTTP/1.a", W.request("GET / HTTP/1.a", "Host: a"), 400],
    ["version HTTP/4294967295.1", W.request("GET / HTTP/4294967295.1", "Host: a"), 400],
    ["version HTTP/11.1", W.request("GET / HTTP/11.1", "Host: a"), 400],
    ["version HTTP/1.10", W.request("GET / HTTP/1.10", "Host: a"), 400],
    ["version HTTP/1", W.request("GET / HTTP/1", "Host: a"), 400],
    ["version HTTP/1.1.1", W.request("GET / HTTP/1.1.1", "Host: a"), 400],
    ["version in lower case", W.request("GET / http/1.1", "Host: a"), 400],
    ["version in mixed case", W.request("GET / Http/1.1", "Host: a"), 400],
    ["version without slash", W.request("GET / HTTP 1.1", "Host: a"), 400],
    ["version with junk", W.request("GET / HTTP/1.1x", "Host: a"), 400],
    ["TLS ClientHello on a plain port", CLIENT_HELLO, 400],
    ["version HTTP/2.0", W.request("GET / HTTP/2.0", "Host: a"), 505],
    ["version HTTP/1.2", W.request("GET / HTTP/1.2", "Host: a"), 505],
    ["version HTTP/0.9", W.request("GET / HTTP/0.9", "Host: a"), 505],
    ["version HTTP/3.0", W.request("GET / HTTP/3.0", "Host: a"), 505],
    ["version HTTP/9.9", W.request("GET / HTTP/9.9", "Host: a"), 505],
    ["CONNECT", W.request("CONNECT example.com:443 HTTP/1.1", "Host: example.com:443"), 501]
  ]

  refuses "host", [
    ["missing on HTTP/1.1", W.request("GET / HTTP/1.1"), 400],
    # RFC 9112 §3.2: the 400 applies whatever the target's form.
    ["missing with absolute form", W.request("GET http://a.test/ HTTP/1.1"), 400],
    ["twice, same value", W.request("GET / HTTP/1.1", "Host: a", "Host: a"), 400],
    ["twice, different values", W.request("GET / HTTP/1.1", "Host: a", "Host: b"), 400],
    ["twice, names in different case", W.request("GET / HTTP/1.1", "Host: a", "host: b"), 400],
    # RFC 9112 §3.2: more than one Host is a 400 on any request, not only HTTP/1.1.
    ["twice on HTTP/1.0", W.request("GET / HTTP/1.0", "Host: a", "Host: b"), 400],
    ["space inside", W.request("GET / HTTP/1.1", "Host: a b"), 400],
    ["slash", W.request("GET / HTTP/1.1", "Host: a/b"), 400],
    ["userinfo", W.request("GET / HTTP/1.1", "Host: user@a"), 400],
    ["question mark", W.request("GET / HTTP/1.1", "Host: a?b"), 400],
    ["hash", W.request("GET / HTTP/1.1", "Host: a#b"), 400],
    ["backslash", W.request("GET / HTTP/1.1", "Host: a\\b"), 400],
    ["double quotes", W.request("GET / HTTP/1.1", "Host: \"a\""), 400],
    ["non-ASCII", W.request("GET / HTTP/1.1", "Host: caf\xC3\xA9.test".b), 400],
    ["port not numeric", W.request("GET / HTTP/1.1", "Host: a:b"), 400],
    ["two ports", W.request("GET / HTTP/1.1", "Host: a:1:2"), 400],
    ["unclosed IPv6 literal", W.request("GET / HTTP/1.1", "Host: [::1"), 400],
    ["IPv6 without brackets", W.request("GET / HTTP/1.1", "Host: ::1"), 400],
    ["junk after IPv6 literal", W.request("GET / HTTP/1.1", "Host: [::1]x"), 400]
  ]

  refuses "sizes", [
    ["request line over max_request_line", W.request("GET /#{'a' * 60} HTTP/1.1", "Host: a"), 414,
     { max_request_line: 32 }],
    ["request line never ends", "GET /#{'a' * 60}".b, 414, { max_request_line: 32 }],
    ["method over max_request_line", W.request("#{'A' * 60} / HTTP/1.1", "Host: a"), 414,
     { max_request_line: 32 }],
    ["request line over default", W.request("GET /?q=#{'a' * 8200} HTTP/1.1", "Host: a"), 414],
    ["field name over max_field_name", W.get("X-#{'a' * 20}: v"), 431, { max_field_name: 8 }],
    ["field name never ends", "GET / HTTP/1.1\r\nHost: a\r\nX#{'a' * 40}".b, 431, { max_field_name: 8 }],
    ["field value over max_field_value", W.get("X: #{'v' * 40}"), 431, { max_field_value: 16 }],
    ["field value never ends", "GET / HTTP/1.1\r\nHost: a\r\nX: #{'v' * 40}".b, 431, { max_field_value: 16 }],
    ["field line never ends, both field limits small", "GET / HTTP/1.1\r\nHost: a\r\nX: #{'v' * 100}".b, 431,
     { max_field_name: 8, max_field_value: 16 }],
    ["head over max_head", W.get(*Array.new(10) { |i| "X-#{i}: vvvvvvvv" }), 431, { max_head: 64 }],
    ["head never ends", "GET / HTTP/1.1\r\n#{"X: v\r\n" * 30}".b, 431, { max_head: 64 }],
    ["field count over max_fields", W.get("X-A: 1", "X-B: 2", "X-C: 3"), 431, { max_fields: 3 }],
    ["field count over default", W.get(*Array.new(100) { |i| "X-#{i}: v" }), 431],
    ["Content-Length over max_body", W.post("Content-Length: 11", body: "hello world"), 413, { max_body: 10 }],
    ["Content-Length over max_body, body not sent",
     W.post("Content-Length: 11", "Expect: 100-continue"), 413, { max_body: 10 }],
    ["Content-Length over default max_body", W.post("Content-Length: 104857601"), 413],
    ["one chunk over max_body", W.chunked("b\r\nhello world\r\n0\r\n\r\n"), 413, { max_body: 10 }],
    ["chunks adding up over max_body", W.chunked("6\r\nhello \r\n6\r\nworld!\r\n0\r\n\r\n"), 413,
     { max_body: 10 }],
    ["declared chunk over default max_body", W.chunked("fffffffffffffff\r\nabc"), 413]
  ]

  refuses "expect", [
    ["other expectation", W.post("Content-Length: 1", "Expect: 200-ok", body: "x"), 417],
    ["100-continue with a suffix", W.post("Content-Length: 1", "Expect: 100-continuex", body: "x"), 417],
    ["another status", W.post("Content-Length: 1", "Expect: 101-continue", body: "x"), 417],
    ["list with 100-continue", W.post("Content-Length: 1", "Expect: 100-continue, foo", body: "x"), 417],
    ["empty elements do not hide another", W.post("Content-Length: 1", "Expect: , foo, ", body: "x"), 417]
  ]

  # Limits are inclusive: a request exactly at each unambiguous limit passes.
  def test_sizes_exactly_at_limits_are_accepted
    assert_accepted(W.post("Content-Length: 10", body: "0123456789"), max_body: 10)
    assert_accepted(W.chunked("4\r\n0123\r\n6\r\n456789\r\n0\r\n\r\n"), max_body: 10)
    assert_accepted(W.get("X-A: 1", "X-B: 2"), max_fields: 3)
    assert_accepted(W.get("X-Abcdef: v"), max_field_name: 8)
    assert_accepted(W.get("X: #{'v' * 16}"), max_field_value: 16)
  end

  # Obfuscated header names: a name with "_" is dropped before framing, so it
  # can neither frame the body nor clobber its dashed twin.
  def test_underscore_transfer_encoding_does_not_frame
    result = assert_accepted(W.post("Transfer_Encoding: chunked", "Content-Length: 5", body: HELLO))
    assert_equal [HELLO, false, 5], [result.body, result.chunked, result.content_length]
    refute result.env.key?("HTTP_TRANSFER_ENCODING")
  end

  def test_underscore_transfer_encoding_is_not_te_on_http10
    result = assert_accepted(W.request("POST / HTTP/1.0", "Transfer_Encoding: chunked", "Content-Length: 0"))
    assert_equal false, result.chunked
  end

  def test_underscore_content_length_does_not_frame
    bytes = W.get("Content_Length: 5")
    result = assert_accepted(bytes + HELLO.b)
    assert_equal [bytes.bytesize, ""], [result.consumed, result.body]
    refute result.env.key?("CONTENT_LENGTH")
  end

  def test_underscore_content_length_is_not_a_second_content_length
    result = assert_accepted(W.post("Content_Length: 3", "Content-Length: 5", body: HELLO))
    assert_equal [HELLO, "5"], [result.body, result.env["CONTENT_LENGTH"]]
  end

  def test_underscore_name_never_clobbers_dashed_twin
    ["X-Forwarded-For: real", "X_Forwarded_For: spoof"].permutation.each do |fields|
      assert_equal "real", assert_accepted(W.get(*fields)).env["HTTP_X_FORWARDED_FOR"], fields.inspect
    end
  end

  # Trailers: fields that would change framing or routing are discarded.
  def test_framing_fields_in_trailers_are_discarded
    message = W.chunked("3\r\nabc\r\n0\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\nHost: evil.test\r\n\r\n")
    result = assert_accepted(message + HELLO.b)

    assert_equal [message.bytesize, "abc", nil], [result.consumed, result.body, result.content_length]
    refute result.env.key?("CONTENT_LENGTH")
    assert_equal ["chunked", "example.com"], result.env.values_at("HTTP_TRANSFER_ENCODING", "HTTP_HOST")
  end

  def test_error_is_sticky_until_reset
    parser = Spindle::HTTP::Parser.new
    error = assert_raises(Spindle::HTTP::BadRequest) { parser.execute(W.get("X: a\x00b"), 0, String.new) }
    assert_equal 400, error.status
    assert_kind_of Spindle::HTTP::ParseError, error

    assert_raises(Spindle::HTTP::BadRequest) { parser.execute(W.get, 0, String.new) }
    parser.reset
    parser.execute(W.get, 0, String.new)
    assert parser.done?
  end

  def test_every_error_class_is_a_parse_error
    ERROR_CLASSES.each_key do |status|
      assert_operator error_class(status), :<, Spindle::HTTP::ParseError
    end
  end
end
