# frozen_string_literal: true

require "socket"
require "stringio"
require "spindle/config"
require "spindle/log"
require "spindle/cluster/children"
require "spindle/cluster/message"
require "spindle/cluster/supervisor"
require "spindle/cluster/reforker"
require "spindle/cluster/reaper"
require "spindle/cluster/renewal"
require "spindle/cluster/shutdown"
require "spindle/cluster/takeover"
require "spindle/cluster/master_services"
require "spindle/process/phase"

# The master's pieces (Supervisor, Reforker, Reaper, Renewal, Shutdown,
# Takeover, MasterServices) without a master and without a fork: the real Children
# registry holding records whose processes are only pretended, a clock the
# test moves, a spawner that records where each worker would come from, a
# signal port that records what would be sent, and notes that record what
# systemd would hear. Each child's channel is a real socketpair, so what the
# master would tell a process can be read at the other end (#told).
module FakeCluster
  # Monotonic seconds that pass only when the test says so.
  class Clock
    attr_reader :now

    def initialize = @now = 1000.0
    def call = @now
    def advance(seconds) = @now += seconds
  end

  # Spawner#spawn's contract: a booting Child in the registry. A worker forked
  # by the master has a pid at once; one forked by a mold only once it boots.
  class Spawner
    attr_reader :spawned, # [index, where from: "master" or the mold's generation]
                :closed_in_child # the master's IOs each worker would close

    def initialize(children, pids, clock)
      @children = children
      @pids = pids
      @clock = clock
      @spawned = []
      @closed_in_child = []
    end

    def close_in_child(io) = @closed_in_child << io

    def spawn(index, from: nil)
      mold = from || @children.mold
      @spawned << [index, mold ? "mold #{mold.generation}" : "master"]
      FakeCluster.add(@children, @clock, index: index, generation: mold ? mold.generation : 0,
                                         pid: mold ? nil : @pids.next, state: :booting)
    end
  end

  # Systemd::ClusterNotes' calls, recorded: [name, what] in order.
  class Notes
    attr_reader :said

    def initialize = @said = []
    def speaking_when(_in_charge) = self
    def tick_limit(default) = default
    def stopping(how) = @said << [:stopping, how]
    def reloading(why) = @said << [:reloading, why]
    def reloaded(outcome) = @said << [:reloaded, outcome]
    def took_over(desired) = @said << [:took_over, desired]
  end

  # The far ends of the channels, by child: what the master sent each one.
  PEERS = {}.compare_by_identity

  module_function

  def add(children, clock, index:, generation: 0, pid: nil, state: :serving, requests: 0)
    ours, theirs = UNIXSocket.pair(:SEQPACKET)
    child = Spindle::Cluster::Child.new(index: index, generation: generation, channel: ours, pid: pid,
                                        spawned_at: clock.now)
    child.state = state
    child.checkin = Spindle::Cluster::Message::Checkin.new(requests: requests, in_flight: 0, oldest_request_age: 0)
    PEERS[child] = theirs
    children.add(child)
    child
  end

  # The messages the master sent this child so far; :eof once its side
  # was shut down (how a mold is retired).
  def told(child)
    peer = PEERS.fetch(child)
    messages = []
    loop do
      message = Spindle::Cluster::Message.receive_nonblock(peer)
      return messages if message == :wait
      return messages << :eof if message.nil?

      messages << message
    end
  end

  def config(**values) = Spindle::Config.new({ workers: 2, worker_timeout: 10.0 }.merge(values))

  def log(err = StringIO.new) = Spindle::Log.new(out: StringIO.new, err: err, quiet: true)
end
