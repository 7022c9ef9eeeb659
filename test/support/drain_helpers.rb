# frozen_string_literal: true

require "socket"

# Checks for tests of draining servers. HttpClient#read_until_eof counts a
# reset as a close; a drain must do better than that: an idle keep-alive
# connection is closed with a FIN, so a client that sends its next request at
# that moment sees a clean end, not a reset.
module DrainHelpers
  # Waits for the server to close an idle connection; fails on a reset, on
  # bytes (a response nobody asked for), or when nothing happens in time.
  def assert_closed_cleanly(connection, deadline: HttpClient::DEFAULT_DEADLINE)
    socket = connection.socket
    limit = Process.clock_gettime(Process::CLOCK_MONOTONIC) + deadline
    loop do
      data = socket.read_nonblock(1024, exception: false)
      return if data.nil?

      flunk "an idle connection got #{data.inspect} instead of a close" unless data == :wait_readable
      remaining = limit - Process.clock_gettime(Process::CLOCK_MONOTONIC)
      flunk "the server did not close the idle connection within #{deadline}s" unless remaining.positive?
      socket.wait_readable(remaining)
    end
  rescue Errno::ECONNRESET
    flunk "the server reset an idle keep-alive connection instead of closing it"
  end

  def refute_app_errors(process)
    refute_match(/app raised|Async::Stop/, process.output, "a drain must not fail requests inside the app")
  end
end
