# frozen_string_literal: true

require "test_helper"
require "io/wait"
require "rbconfig"
require "spindle/cluster/subreaper"

# Cluster::Subreaper (prctl in ext/spindle/subreaper.c): a process that made
# itself the child subreaper reaps the orphans of its descendants, as the
# master reaps the workers a mold forked and left. Each case runs in a forked
# child, so the test process itself is never made a subreaper.
class SubreaperTest < Minitest::Test
  Subreaper = Spindle::Cluster::Subreaper
  DEADLINE = 30

  def setup
    skip "PR_SET_CHILD_SUBREAPER is Linux's" unless RUBY_PLATFORM.include?("linux")
  end

  def test_an_orphan_is_reparented_to_the_subreaper_and_reaped_by_it
    enabled, parent_seen, reaped, orphan = in_child do
      enabled = Subreaper.enable
      orphan_pid, parent_seen, reaped = orphan_of_a_child
      [enabled, parent_seen, reaped, orphan_pid]
    end
    assert_equal true, enabled
    assert_equal :self, parent_seen, "the orphan's parent after its own parent exited"
    assert_equal orphan, reaped
  end

  # The same without the call: the orphan goes to init (or whichever
  # subreaper is above this process), so the test above can fail.
  def test_without_it_the_orphan_goes_elsewhere
    parent_seen = in_child { orphan_of_a_child }[1]
    refute_equal :self, parent_seen
  end

  # Off Linux or with no extension built, the master runs without it: the
  # extension missing is taken for absent (a child Ruby whose extension
  # cannot be found), and Fiddle is loaded by neither path.
  def test_without_the_extension_enable_is_false_and_nothing_loads_fiddle
    script = <<~RUBY
      require "spindle/boot/native"
      Spindle::Native.singleton_class.send(:remove_method, :require_extension)
      Spindle::Native.define_singleton_method(:require_extension) do |name|
        raise Spindle::Native::MissingExtension, name
      end
      require "spindle/cluster/subreaper"
      require "spindle/http/file_body"
      puts [Spindle::Cluster::Subreaper.enable, Spindle::HTTP::FileBody::SENDFILE,
            $LOADED_FEATURES.any? { |f| f.end_with?("/fiddle.rb") }].inspect
    RUBY
    lib = File.expand_path("../../lib", __dir__)
    output = IO.popen([RbConfig.ruby, "-w", "-I", lib, "-e", script], err: %i[child out], &:read)
    assert_equal "[false, false, false]\n", output
  end

  def test_the_server_never_loads_fiddle
    lib = File.expand_path("../../lib", __dir__)
    script = 'require "spindle/cluster/master"; require "spindle/process/server"; ' \
             'puts $LOADED_FEATURES.grep(%r{/fiddle[./]}).inspect'
    output = IO.popen([RbConfig.ruby, "-w", "-I", lib, "-e", script], err: %i[child out], &:read)
    assert_equal "[]\n", output
  end

  private

  # Forks a child that forks a grandchild (the orphan) and exits. Once its
  # parent is gone, the orphan reports whose child it is now; this process
  # then waits for any child. Returns the orphan's pid, :self or its new
  # parent's pid, and what Process.wait reaped (nil: nothing was ours).
  def orphan_of_a_child
    reader, writer = IO.pipe
    go_reader, go_writer = IO.pipe
    middle = fork do
      reader.close
      go_writer.close
      orphan = fork do
        go_reader.read # until this process's parent has exited and closed its end
        writer.puts Process.ppid
        exit!(0)
      end
      writer.puts orphan
      exit!(0)
    end
    writer.close
    go_reader.close
    orphan = Integer(read_line(reader))
    Process.wait(middle)
    go_writer.close
    parent = Integer(read_line(reader))
    reaped = begin
      Process.wait
    rescue Errno::ECHILD
      nil
    end
    [orphan, parent == Process.pid ? :self : parent, reaped]
  ensure
    [reader, writer, go_reader, go_writer].each { |io| io&.close unless io&.closed? }
  end

  def read_line(io)
    raise "no line within #{DEADLINE}s" unless io.wait_readable(DEADLINE)

    io.gets or raise "the pipe closed without a line"
  end

  def in_child
    reader, writer = IO.pipe
    pid = fork do
      reader.close
      Marshal.dump(yield, writer)
      exit!(0)
    rescue Exception => e # rubocop:disable Lint/RescueException -- the child ends here, always
      Marshal.dump(RuntimeError.new("in the child: #{e.class}: #{e.message}"), writer)
      exit!(1)
    end
    writer.close
    raise "the child said nothing within #{DEADLINE}s" unless reader.wait_readable(DEADLINE)

    value = Marshal.load(reader)
    Process.wait(pid)
    raise value if value.is_a?(Exception)

    value
  ensure
    reader&.close
  end
end
