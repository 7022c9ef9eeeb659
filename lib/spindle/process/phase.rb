# frozen_string_literal: true

module Spindle
  # Where a process is in its life, in one place: a serving process (alone or
  # a cluster worker) or a master. The Server or the Master writes it; every
  # other part (engines, the handler, the signals, the side services) reads
  # it, or asks to be told when it moves (#on_change). It only moves forward:
  #
  #   serving ──► leaving ──► draining ──► forced
  #      └──────────────────────┘  ▲           ▲
  #      └─────────────────────────┴───────────┘
  #
  #   serving   accepts and serves; responses may keep their connection.
  #   leaving   the drain delay (--drain-delay): still accepts and serves,
  #             but the health path answers 503 and every response closes
  #             its connection, so load balancers move traffic away first.
  #   draining  no longer accepts; in-flight requests finish, idle
  #             connections close, the process ends when none is left.
  #   forced    ends now: a second stop signal, or the drain's time ran out.
  #
  # A hot restart (USR2) adds a role beside the phase, not a phase of its
  # own: #hand_over marks a process whose successor now serves its sockets
  # (it drains without the delay, and leaves the socket files to that one).
  #
  # What a drained process does next is decided once, by whichever comes
  # first (#once_drained): it ends (#end!: a stop signal, or its master's
  # stop order), or a cluster worker its master drained to be the next mold
  # becomes that mold (#become_mold!). A stop during that drain comes first,
  # and ends the worker instead; one after it ends the mold-to-be at once.
  #
  # Reads are lock-free (a Symbol and two booleans in instance variables,
  # the booleans read through attribute readers: the engines ask after every
  # select and the handler after every response, so the answer costs no
  # comparison); moves take a lock, so two threads that stop at once agree on
  # which of them moved it.
  class Phase
    ORDER = %i[serving leaving draining forced].freeze

    def initialize
      @name = :serving
      @serving = @accepting = true
      @handed_over = false
      @once_drained = nil # :exit or :mold
      @lock = Thread::Mutex.new
      @watchers = []
    end

    attr_reader :name, :once_drained, :serving, :accepting

    alias serving? serving
    # A stop began (any phase after serving).
    def stopping? = !@serving
    # New connections are still taken (serving, or the drain delay).
    alias accepting? accepting
    # A response may keep its connection open for the next request.
    alias keep_alive? serving
    # Draining or forced: idle connections close, nothing new is accepted.
    def draining? = !accepting?
    def forced? = @name == :forced
    def handed_over? = @handed_over
    # A stop came: the process ends once drained.
    def ending? = @once_drained == :exit

    def leave! = move(:leaving)
    def drain! = move(:draining)
    def force! = move(:forced)

    def hand_over!
      @handed_over = true
      self
    end

    # Each returns whether the process now does that once drained (false:
    # the other was decided first).
    def end! = decide(:exit)
    def become_mold! = decide(:mold)

    # The block runs with the new phase's name after each move, on the thread
    # that moved it; it must not block (wake a loop, set a deadline).
    def on_change(&block)
      @lock.synchronize { @watchers << block }
      self
    end

    def to_s = @name.to_s

    private

    def decide(what)
      @lock.synchronize { @once_drained ||= what } == what
    end

    # Returns true when this call moved the phase, false when it was there or
    # past it already.
    def move(to)
      watchers = @lock.synchronize do
        return false if ORDER.index(to) <= ORDER.index(@name)

        @name = to
        @serving = false
        @accepting = to == :leaving
        @watchers.dup
      end
      watchers.each { |watcher| watcher.call(to) }
      true
    end
  end
end
