# frozen_string_literal: true

require_relative "../support/spindle_process"

# rack.response_finished: callbacks the app registers run once the response
# has been handled, also when the app raised.
class ResponseFinishedTest < SpindleIntegrationTest
  serve_with "-b", LOOPBACK, app_path("all")

  def test_callbacks_run_after_the_response
    finished = rendezvous
    response = roundtrip(request("GET", "/response_finished?path=#{finished.path}"))
    assert_equal 200, response.status, response.to_s
    visit = finished.await_any
    assert_equal "finished status=200 error=", visit.message
  end

  def test_callbacks_run_when_the_app_raises
    finished = rendezvous
    response = roundtrip(request("GET", "/response_finished?raise=1&path=#{finished.path}"))
    assert_equal 500, response.status
    visit = finished.await_any
    assert_match(/\Afinished status=\S+ error=\S+\z/, visit.message, "the callback should be told about the error")
  end
end
