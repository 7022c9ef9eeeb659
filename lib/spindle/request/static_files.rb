# frozen_string_literal: true

require "time"
require "rack/mime"
require_relative "../http/header_lines"

module Spindle
  # --static DIR: the server answers GET and HEAD of the files under DIR itself,
  # before the app, the way nginx's `try_files $uri @app` does in front of one.
  # A request whose path names a regular file under DIR gets it (or a 304);
  # every other request goes to the app unchanged: a directory, a missing
  # file, a path with a dot segment (`..`, `.env`, `.git/`), a path that does
  # not decode, a file whose real path (after symlinks) leaves DIR, and every
  # method but GET and HEAD. Range requests get the whole file (RFC 9110
  # §14.2 lets a server ignore Range; no accept-ranges header is sent).
  #
  # Per request: one stat(2) of the file. What a file's response needs (its
  # headers, and the bytes of a small file) is kept per path and made again
  # when the stat says the file changed (Entry#current?). A
  # larger file goes out with sendfile(2) through the body's #to_path.
  class StaticFiles
    METHODS = %w[GET HEAD].freeze
    # Files up to this size are kept in memory and go out with the head in
    # one write; larger ones are sent from the file each time.
    SMALL = 64 * 1024
    # The most bytes of small files kept in memory at once; past it, further
    # files go out from disk (their headers are still kept).
    MEMORY = 16 * 1024 * 1024
    DEFAULT_TYPE = "application/octet-stream"
    # A path that needs no decoding or cleaning: single slashes, no percent
    # sign, no segment that begins with a dot.
    PLAIN = %r{\A(?:/[A-Za-z0-9_~+@=,:-][A-Za-z0-9_~+@=,:.-]*)+\z}

    # One file's response, valid while the file's stat matches: the same
    # device, inode and size, and the same ctime, which every write, chmod,
    # rename over it and mtime change moves.
    Entry = Struct.new(:dev, :ino, :size, :ctime, :headers, :bytes, :path, :etag, :mtime) do
      def current?(stat) = ctime == stat.ctime && ino == stat.ino && size == stat.size && dev == stat.dev
    end

    # A file's body for the writer: #to_path lets it sendfile; #each is the
    # Rack way for anything that reads it instead.
    class Whole
      CHUNK = 64 * 1024

      attr_reader :to_path

      def initialize(path)
        @to_path = path
      end

      def each
        File.open(@to_path, "rb") do |file|
          while (chunk = file.read(CHUNK))
            yield chunk
          end
        end
      end
    end

    def self.for(dir) = dir && new(dir)

    def initialize(dir)
      @root = File.realpath(dir)
      @entries = {} # relative path => Entry; read without the lock
      @kept = 0
      @filling = Mutex.new # several threads may miss at once
    end

    # The response for env when it asks for a file under the root, else nil.
    def response(env)
      return nil unless METHODS.include?(env["REQUEST_METHOD"])
      return nil unless (entry = entry_for(env["PATH_INFO"]))

      return [200, entry.headers, body(entry)] unless not_modified?(env, entry)

      [304, entry.headers.slice("etag", "last-modified"), []]
    end

    private

    def body(entry) = entry.bytes ? [entry.bytes] : Whole.new(entry.path)

    def entry_for(path_info)
      return nil unless (relative = self.class.relative(path_info))

      entry = @entries[relative]
      path = entry ? entry.path : "#{@root}/#{relative}"
      stat = File.stat(path)
      return entry if entry&.current?(stat)
      return nil unless stat.file? && stat.readable?

      @filling.synchronize { fill(relative, path, stat) }
    rescue SystemCallError, IOError
      nil
    end

    # A new entry for a file seen for the first time or changed since, kept
    # under its relative path (so the spellings of one path share it). nil
    # when its real path is outside the root (a symlink out of it).
    def fill(relative, path, stat)
      return nil unless File.realpath(path).start_with?("#{@root}/")

      forget(@entries.delete(relative))
      bytes = keep?(stat.size) ? File.binread(path).freeze : nil
      return nil if bytes && bytes.bytesize != stat.size # changed while read: not this time

      @kept += bytes.bytesize if bytes
      @entries[relative] = entry(path, stat, bytes)
    end

    def entry(path, stat, bytes)
      etag = %("#{stat.mtime.to_i.to_s(16)}-#{stat.size.to_s(16)}")
      headers = HTTP::HeaderLines::Rendered.new(
        "content-type" => Rack::Mime.mime_type(File.extname(path), DEFAULT_TYPE),
        "content-length" => stat.size.to_s,
        "last-modified" => stat.mtime.httpdate,
        "etag" => etag,
      )
      Entry.new(stat.dev, stat.ino, stat.size, stat.ctime, headers, bytes, path, etag, stat.mtime.to_i)
    end

    def keep?(size) = size <= SMALL && @kept + size <= MEMORY

    def forget(entry)
      @kept -= entry.bytes.bytesize if entry&.bytes
    end

    # RFC 9110 §13.1: If-None-Match, when sent, decides (weak comparison);
    # If-Modified-Since only without it.
    def not_modified?(env, entry)
      if (tags = env["HTTP_IF_NONE_MATCH"])
        return tags.strip == "*" || tags.split(",").any? { |tag| tag.strip.delete_prefix("W/") == entry.etag }
      end
      return false unless (since = env["HTTP_IF_MODIFIED_SINCE"])

      entry.mtime <= Time.httpdate(since).to_i
    rescue ArgumentError
      false
    end

    # PATH_INFO as a path relative to the root, percent-decoded, or nil when
    # it must not name a file here: not absolute, a NUL or an invalid UTF-8
    # sequence once decoded, or a segment that begins with a dot (`..` and
    # `.` as well as hidden files).
    def self.relative(path_info)
      return path_info[1..] if path_info&.match?(PLAIN)
      return nil unless path_info&.start_with?("/")

      path = path_info.include?("%") ? decode(path_info) : path_info
      return nil if path.nil? || path.include?("\0")

      segments = path.split("/").reject(&:empty?)
      return nil if segments.empty? || segments.any? { |segment| segment.start_with?(".") }

      segments.join("/")
    end

    def self.decode(path)
      decoded = path.b.gsub(/%(\h\h)/n) { Regexp.last_match(1).hex.chr }.force_encoding(Encoding::UTF_8)
      decoded.valid_encoding? ? decoded : nil
    end
  end
end
