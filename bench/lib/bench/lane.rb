# frozen_string_literal: true

require_relative "paths"

module Bench
  # Which Ruby the servers run on, and whether with YJIT. By default this
  # machine's Ruby (3.1, YJIT off). `--ruby 3.4` (or 3.3) runs the same
  # bench/run inside bin/test-ruby3.4's (bin/test-ruby3.3's) Debian trixie
  # chroot, on the gems each Gemfile's ruby3.3/ lock names (the newest Puma
  # and Falcon those Rubies allow; Bench::Paths), with YJIT on for every Ruby
  # server unless --no-yjit. YJIT is turned on by RUBY_YJIT_ENABLE=1 in each
  # server's environment (Bench::ServerProcess), the same for Spindle and the
  # peers, and every report says which. Debian builds its Rubies without
  # YJIT: with YJIT the chroot runs bench/run, and so every server, on the
  # Ruby bin/build-yjit builds there (SPINDLE_RUBY34_YJIT=1 for
  # bin/test-ruby3.4, whose tests run on that Ruby anyway).
  module Lane
    HERE = RUBY_VERSION[/\A\d+\.\d+/]
    # A Ruby other than this machine's => the script that enters it.
    CHROOTS = { "3.3" => "bin/test-ruby3.3", "3.4" => "bin/test-ruby3.4" }.freeze
    RUBIES = [HERE, *CHROOTS.keys].uniq.freeze

    class << self
      def yjit? = @yjit == true

      attr_writer :yjit

      # Whether bench/run must hand the run to another Ruby.
      def elsewhere?(ruby) = !ruby.nil? && ruby != HERE

      # The command that runs bench/run with argv on that Ruby: its chroot
      # script, told to run bench/run instead of the tests, with --ruby
      # dropped and YJIT said explicitly. The caller holds the machine's run
      # lock meanwhile (the chroot has a /tmp, and so a run lock, of its own).
      def command(ruby, argv, yjit:)
        script = CHROOTS.fetch(ruby) { raise ArgumentError, "no way to run Ruby #{ruby} here (known: #{RUBIES.join(', ')})" }
        [{ setting(ruby, "SCRIPT") => "bench/run", setting(ruby, "YJIT") => (yjit ? "1" : nil) },
         [File.join(Paths::ROOT, script), *without_ruby(argv), yjit ? "--yjit" : "--no-yjit"]]
      end

      # The lane's own setting, as bin/test-ruby names it: SPINDLE_RUBY34_YJIT.
      def setting(ruby, name) = "SPINDLE_RUBY#{ruby.delete('.')}_#{name}"

      # bin/test-ruby3.4 takes its chroot's lock alone (then shares it), so
      # it waits for every test run on 3.4 to end: waiting for that before
      # taking this machine's run lock keeps other bench runs from waiting
      # on this one meanwhile. False when the chroot stayed busy.
      def wait_for_chroot(ruby, wait_s)
        lock = "#{chroot(ruby)}.lock"
        !File.exist?(lock) || system("flock", "-x", "-w", wait_s.to_i.to_s, lock, "true")
      end

      # Where bin/test-ruby keeps that Ruby's chroot (its lane_settings).
      def chroot(ruby) = ENV.fetch(setting(ruby, "CHROOT"), "/var/cache/spindle/trixie-ruby#{ruby}")

      def without_ruby(argv)
        argv.each_with_index.reject do |arg, i|
          arg.start_with?("--ruby") || (argv[i - 1] == "--ruby" && i.positive?)
        end.map(&:first)
      end
    end
  end
end
