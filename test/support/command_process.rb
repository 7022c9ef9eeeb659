# frozen_string_literal: true

require_relative "spindle_process"

# A server started by another command than this checkout's bin/spindle
# (`bundle exec spindle` in an app, an installed gem's binstub), watched the
# same way: output drained, start-up line parsed, process group killed.
class CommandProcess < SpindleProcess
  # One list of live processes, SpindleProcess's, killed after the run.
  def self.register(process) = SpindleProcess.register(process)

  def self.unregister(process) = SpindleProcess.unregister(process)

  def self.start(command, *args, start_deadline: START_DEADLINE, **options)
    process = new(command, args, **options)
    process.wait_for_start(start_deadline)
    process
  rescue StandardError
    process&.kill!
    raise
  end

  def self.run(command, *args, deadline: EXIT_DEADLINE, **options)
    process = new(command, args, **options)
    process.kill! unless process.wait_for_exit(deadline)
    process
  end

  def initialize(command, args, **options)
    @command = command
    super(args, **options)
  end

  def inspect
    "#<CommandProcess pid=#{pid} command=#{(@command + args).inspect} status=#{status.inspect}>"
  end

  private

  attr_reader :command
end
