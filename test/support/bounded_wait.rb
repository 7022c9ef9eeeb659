# frozen_string_literal: true

# Waits for a child of bin/test up to a deadline, then stops it: TERM, and
# KILL if it is still there GRACE seconds later. A hang in what bin/test
# runs then ends the run, instead of holding CI until CI's own limit (the
# 3.3 lane once hung in a bench test that waited for a process which never
# got its TERM).
module BoundedWait
  GRACE = 10 # seconds between TERM and KILL

  module_function

  # The child's Process::Status, or nil when it had to be stopped. group:
  # the child leads a process group of its own (spawned with pgroup: true);
  # the signals then go to the whole group, so nothing it started keeps
  # running, or keeps bin/test's output open, after it.
  def wait(pid, seconds, group: false)
    target = group ? -pid : pid
    waiter = Process.detach(pid)
    return finish(waiter, target, group) if waiter.join(seconds)

    signal(:TERM, target)
    signal(:KILL, target) unless waiter.join(GRACE)
    finish(waiter, target, group)
    nil
  rescue Interrupt # ^C reaches bin/test alone, not a group of its own
    signal(:KILL, target) if group
    raise
  end

  # What the child left in its group goes with it.
  def finish(waiter, target, group)
    status = waiter.value
    signal(:KILL, target) if group
    status
  end

  # It may have ended in the meantime.
  def signal(name, pid)
    Process.kill(name, pid)
  rescue Errno::ESRCH
    nil
  end
end
