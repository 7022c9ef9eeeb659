# frozen_string_literal: true

# The CPUs a process's threads may run on, as the kernel lists them in
# /proc (Cpus_allowed_list), for the --cpu-affinity tests.
module ThreadCpus
  module_function

  # The CPUs of pid's main thread.
  def of_process(pid) = parse(File.read("/proc/#{pid}/status"))[1]

  # [name, CPUs] for each thread of pid; a thread that ended since the
  # listing is left out.
  def of_threads(pid)
    Dir["/proc/#{pid}/task/*/status"].filter_map do |path|
      parse(File.read(path))
    rescue Errno::ENOENT
      nil
    end
  end

  # A status file's thread name and CPU list ("0-2,5" => [0, 1, 2, 5]).
  def parse(status)
    text = status[/^Cpus_allowed_list:\s*(\S+)/, 1]
    cpus = text.split(",").flat_map do |part|
      first, last = part.split("-").map(&:to_i)
      (first..(last || first)).to_a
    end
    [status[/^Name:\s*(.*)$/, 1], cpus]
  end
end
