# frozen_string_literal: true

require_relative "../test_helper"
require "stringio"
require "spindle/log"
require "spindle/ops/thread_dump"

# What a worker logs when the master asks before killing it (URG): the
# requests in flight, without their query strings, and where every thread is.
class ThreadDumpTest < Minitest::Test
  Conn = Struct.new(:current_env)
  Tracker = Struct.new(:in_flight_ages)

  def dump(tracker)
    err = StringIO.new
    Spindle::ThreadDump.new(Spindle::Log.new(out: StringIO.new, err: err), tracker).write
    err.string
  end

  def test_lists_the_requests_in_flight_without_their_query
    upload = Conn.new({ "REQUEST_METHOD" => "POST", "SCRIPT_NAME" => "/app", "PATH_INFO" => "/upload",
                        "QUERY_STRING" => "token=s3cret", "HTTP_X_REQUEST_ID" => "req-1" })
    report = Conn.new({ "REQUEST_METHOD" => "GET", "SCRIPT_NAME" => "", "PATH_INFO" => "/report" })
    reading = Conn.new(nil) # its request is not parsed yet: nothing to say
    text = dump(Tracker.new([[upload, 12.34], [report, 0.5], [reading, 0.1]]))
    assert_match(%r{WARN spindle: thread dump: \d+ thread\(s\), 2 request\(s\) in flight: POST /app/upload \(request id req-1, 12\.3s\), GET /report \(request id -, 0\.5s\)\n},
                 text)
    refute_includes text, "s3cret"
  end

  def test_every_thread_is_listed_with_its_backtrace
    parked = Thread::Queue.new
    thread = Thread.new { park_here(parked) }
    thread.name = "parked"
    Thread.pass until thread.status == "sleep"
    text = dump(nil)
    count = Thread.list.size
    assert_match(/thread dump: #{count} thread\(s\), 0 request\(s\) in flight\n/, text)
    assert_equal count, text.scan(%r{WARN spindle: thread \d+/#{count} }).size
    assert_match(/thread \d+\/\d+ parked \(sleep\):\n(    .*\n)*    .*thread_dump_test\.rb:\d+:in .*park_here/, text)
    assert_match(/thread \d+\/\d+ \S+ \(main, run\):\n/, text)
  ensure
    parked << :go
    thread&.join
  end

  private

  def park_here(queue) = queue.pop
end
