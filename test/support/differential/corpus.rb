# frozen_string_literal: true

module Differential
  # The differential corpus: the parser's test vectors (fuzz/seeds, three
  # control bytes stripped) and requests built from parts and mutated the way
  # smuggling attempts vary them: whitespace, case, duplicated and obfuscated
  # framing fields, chunk sizes and extensions, line endings, control bytes,
  # pipelined pairs. Deterministic for a given seed.
  class Corpus
    Case = Struct.new(:label, :bytes)

    SEEDS_DIR = File.expand_path("../../../fuzz/seeds", __dir__)
    METHODS = %w[GET POST PUT DELETE OPTIONS PATCH HEAD get Get FOO G-ET CONNECT].freeze
    TARGETS = ["/", "/a/b?c=d", "*", "http://h.example/x", "https://h.example:8443", "/a#frag", "/%00",
               "h.example:443", "/a\tb", "/\x7f", "//x", "/?", "/a b"].freeze
    VERSIONS = ["HTTP/1.1", "HTTP/1.0", "HTTP/1.2", "HTTP/2.0", "http/1.1", "HTTP/1.1 ", "HTTP/1", "HTTP/01.1"].freeze
    HOSTS = ["h.example", "h.example:8080", "[::1]:80", "", "a b", "h\x00x", "h.example, x", "a@b", "h_x"].freeze
    LENGTHS = ["5", "05", "+5", "-5", " 5 ", "5 5", "5,5", "5, 5", "0x5", "5.0", "", "99999999999999999999",
               "\x0b5", "5\x0b", "\xa05", "5\r"].freeze
    CODINGS = ["chunked", "Chunked", "CHUNKED", " chunked", "chunked ", "\tchunked", "gzip, chunked",
               "chunked, gzip", "chunked, chunked", "chunked,", ",chunked", "identity", "gzip", "x, chunked",
               "chunked;q=1", "\"chunked\"", "chunk", "chunked\x0b", "\x0bchunked", "\xa0chunked", "chu nked",
               ", chunked", "chunked , ", "gzip, , chunked", "chunked, , chunked", " , "].freeze
    TE_NAMES = ["Transfer-Encoding", "transfer-encoding", "TRANSFER-ENCODING", "Transfer-Encoding ",
                "Transfer_Encoding", " Transfer-Encoding", "Transfer-Encoding\t", "Transfer-Encodings",
                "X-Transfer-Encoding", "Transfer\x00-Encoding"].freeze
    CL_NAMES = ["Content-Length", "content-length", "Content-Length ", "Content_Length", "Content-Length\t",
                " Content-Length", "Content-Lengths"].freeze
    SIZES = ["5", "05", "0005", "5 ", " 5", "0x5", "+5", "-5", "5;a", "5;a=b", "5 ;a=b", "5; a = \"b c\"",
             "5;a=\"b", "5;\"a\"", "5;a=b;c", "5;;", "5;=b", "5\t;a", "fffffffffffffff", "1fffffffffffffff",
             "ffffffffffffffffff", "5\x00", "5x", "", "5\n", "a"].freeze
    EOLS = ["\n", "\r", "\r\r\n", "\n\r", " \r\n", "\r\n\r\n"].freeze
    CONTROLS = ["\x00", "\x01", "\x08", "\x0b", "\x0c", "\x1b", "\x7f", "\x80", "\xff", "\t", " "].freeze
    EXTRAS = ["Connection: close", "Connection: keep-alive", "Expect: 100-continue", "Expect: foo",
              "Upgrade: h2c", "Connection: Upgrade", "Cookie: a=b", "X-A: b\x80c", "Trailer: X"].freeze

    def initialize(seed: 20_24, size: 3000)
      @rng = Random.new(seed)
      @size = size
    end

    def cases
      cases = seeds
      generators = %i[request_line content_length transfer_encoding chunk_body both_framings pipelined
                      smuggle extras]
      @size.times do |i|
        gen = generators[i % generators.size]
        bytes = send(gen)
        bytes = mutate(bytes) if @rng.rand < 0.35
        cases << Case.new(gen.to_s, bytes)
      end
      cases.uniq(&:bytes)
    end

    private

    def pick(list) = list[@rng.rand(list.size)]

    # The first, well-formed entry half the time: most requests get one odd part.
    def near(list) = @rng.rand < 0.5 ? list.first : pick(list)

    def seeds
      Dir[File.join(SEEDS_DIR, "*")].sort.filter_map do |path|
        input = File.binread(path)
        Case.new("test vector", input.byteslice(3..)) if input.getbyte(0).zero?
      end
    end

    def request(line, fields, body = "")
      ([line, *fields, "", ""].join("\r\n") + body).b
    end

    def host = "Host: h.example"

    def request_line
      fields = @rng.rand < 0.8 ? ["Host: #{near(HOSTS)}"] : []
      request("#{near(METHODS)} #{near(TARGETS)} #{near(VERSIONS)}", fields)
    end

    def content_length
      value = near(LENGTHS)
      fields = [host, "#{near(CL_NAMES)}: #{value}"]
      fields << "Content-Length: #{near(LENGTHS)}" if @rng.rand < 0.2
      request("POST / HTTP/1.#{@rng.rand(2)}", fields, "hello" + pick(["", "GET / HTTP/1.1\r\n#{host}\r\n\r\n", "x"]))
    end

    def transfer_encoding
      fields = [host, "#{near(TE_NAMES)}: #{near(CODINGS)}"]
      fields << "Transfer-Encoding: #{near(CODINGS)}" if @rng.rand < 0.25
      request("POST / HTTP/1.#{@rng.rand(4).zero? ? 0 : 1}", fields, chunks)
    end

    def chunks
      data = "hello"
      list = Array.new(@rng.rand(3)) { "#{near(SIZES)}\r\n#{data}#{@rng.rand < 0.85 ? "\r\n" : pick(EOLS)}" }
      trailer = pick(["", "", "X-T: v\r\n", "Content-Length: 5\r\n", "X-T : v\r\n", "X-T: v\n", " X: v\r\n"])
      list.join + "0\r\n#{trailer}\r\n"
    end

    def chunk_body
      request("POST / HTTP/1.1", [host, "Transfer-Encoding: chunked"],
              "#{near(SIZES)}\r\nhello\r\n#{near(SIZES).tr('5', '0')}\r\n\r\n")
    end

    def both_framings
      fields = [host, "#{near(CL_NAMES)}: #{near(LENGTHS)}", "#{near(TE_NAMES)}: #{near(CODINGS)}"]
      request("POST / HTTP/1.1", @rng.rand < 0.5 ? fields : fields.reverse, "5\r\nhello\r\n0\r\n\r\n")
    end

    def pipelined
      first = pick([request("GET / HTTP/1.1", [host]), request("POST / HTTP/1.1", [host, "Content-Length: 3"], "abc"),
                    request("POST / HTTP/1.1", [host, "Transfer-Encoding: chunked"], "3\r\nabc\r\n0\r\n\r\n"),
                    request("GET / HTTP/1.0", ["Connection: keep-alive"]), request("GET / HTTP/1.0", []),
                    request("GET / HTTP/1.1", [host, "Upgrade: websocket", "Connection: Upgrade"])])
      first + pick(["", "\r\n", "\n", " "]) + send(pick(%i[request_line content_length transfer_encoding extras]))
    end

    # A second request hidden where one reading sees a body and another the next request.
    def smuggle
      inner = request("GET /admin HTTP/1.1", [host])
      fields = [host, "#{near(TE_NAMES)}: #{near(CODINGS)}", "#{near(CL_NAMES)}: #{pick(['4', '5', inner.bytesize.to_s])}"]
      fields.shift(@rng.rand(2)) if @rng.rand < 0.3
      request("POST / HTTP/1.1", fields.shuffle(random: @rng), "0\r\n\r\n" + inner)
    end

    def extras
      fields = [host, *Array.new(1 + @rng.rand(2)) { pick(EXTRAS) }]
      request("GET / HTTP/1.#{@rng.rand(2)}", fields)
    end

    # Byte-level mutations: a line end, a control byte, case, whitespace.
    def mutate(bytes)
      bytes = bytes.dup
      at = @rng.rand(bytes.bytesize + 1)
      case @rng.rand(5)
      when 0 then bytes.sub!("\r\n", pick(EOLS)) if bytes.include?("\r\n")
      when 1 then bytes.insert(at, pick(CONTROLS).b)
      when 2 then bytes[at, 6] = bytes.byteslice(at, 6).to_s.swapcase
      when 3 then bytes.sub!(": ", pick([" : ", ":", ":\t", ": \x0b", ":\r\n "]))
      else bytes.insert(at, pick(["\r\n", " ", "\t", ",", ";", "\""]))
      end
      bytes.b
    end
  end
end
