# frozen_string_literal: true

require "open3"
require "securerandom"

class Topology
  # The namespaces of one topology and their wiring: a switch namespace with
  # a bridge, and a veth pair per role from the bridge to an `eth0` in the
  # role's namespace. Every link is created inside namespaces this object
  # made; interface names are per namespace, so they never clash with
  # another run's.
  #
  # Commands enter a namespace with `nsenter --net=/run/netns/NAME`, not
  # `ip netns exec` or `ip -n`: those also make / a slave mount and remount
  # /sys, which fails where / is not a mount point (the Ruby 3.3 lane's
  # chroot: "mount --make-rslave / failed: Invalid argument"). Entering the
  # network namespace alone is all the topology needs.
  class Netns
    PREFIX = "spindle-topo-"
    DIR = "/run/netns" # where `ip netns add` names them
    # spindle-topo-<pid>-<random>-<role>: the pid tells a live run from a
    # stale one.
    NAME = /\A#{PREFIX}(\d+)-\h+-/

    attr_reader :roles

    def initialize
      @run = "#{PREFIX}#{Process.pid}-#{SecureRandom.hex(3)}"
      @created = []
      @roles = {}
    end

    def name(role) = "#{@run}-#{role}"

    # argv prefix that runs a command in namespace ns (a full name).
    def self.enter(ns) = ["nsenter", "--net=#{File.join(DIR, ns)}"]

    # roles: { role => IPv4 address } (a /24 on the bridge).
    def build(roles)
      switch = create(:switch)
      ip_in(switch, "link", "add", "br0", "type", "bridge")
      ip_in(switch, "link", "set", "br0", "up")
      roles.each { |role, address| attach(switch, role, address) }
    end

    # Deletes this run's namespaces. Processes still inside are killed first:
    # a namespace with a process in it outlives `ip netns del`.
    def teardown
      @created.reverse_each { |ns| Netns.remove(ns) }
      @created.clear
    end

    class << self
      # Deletes namespaces with our prefix whose creating process is gone
      # (a run killed before its teardown).
      def sweep_stale
        list.each do |ns|
          pid = ns[NAME, 1]&.to_i
          remove(ns) if pid && !alive?(pid)
        end
      end

      # `ip netns list` also asks the kernel for each namespace's id, and
      # prints "Peer netns reference is invalid" for an entry whose mount is
      # gone (left in the Ruby 3.3 chroot by a run that was killed): noise in
      # the suite's output; the names are listed all the same, and swept.
      def list
        out, = Open3.capture2("ip", "netns", "list", err: File::NULL)
        out.lines.map { |l| l.split.first }.compact.select { |n| n.start_with?(PREFIX) }
      end

      def remove(ns)
        pids(ns).each { |pid| kill(pid) }
        system("ip", "netns", "del", ns, err: File::NULL)
      end

      def pids(ns)
        out, = Open3.capture2("ip", "netns", "pids", ns, err: File::NULL)
        out.split.map(&:to_i)
      end

      # nil when a namespace can be created and used here, else why not.
      def probe
        ns = "#{PREFIX}#{Process.pid}-#{SecureRandom.hex(3)}-probe"
        out, status = Open3.capture2e("ip", "netns", "add", ns)
        return "ip netns add failed: #{out.strip}" unless status.success?

        out, status = Open3.capture2e(*enter(ns), "ip", "link", "set", "lo", "up")
        status.success? ? nil : "nsenter into a namespace failed: #{out.strip}"
      ensure
        system("ip", "netns", "del", ns, err: File::NULL) if ns
      end

      def alive?(pid)
        Process.kill(0, pid)
        true
      rescue Errno::ESRCH
        false
      rescue Errno::EPERM
        true
      end

      private

      def kill(pid)
        Process.kill(:KILL, pid)
      rescue Errno::ESRCH
        nil
      end
    end

    private

    def create(role)
      ns = name(role)
      ip("netns", "add", ns)
      @created << ns
      ip_in(ns, "link", "set", "lo", "up")
      @roles[role] = ns
      ns
    end

    # A veth pair: `v-ROLE` on the bridge, `eth0` in the role's namespace.
    def attach(switch, role, address)
      ns = create(role)
      port = "v-#{role}"[0, 15]
      ip_in(switch, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", ns)
      ip_in(switch, "link", "set", port, "master", "br0", "up")
      ip_in(ns, "addr", "add", "#{address}/24", "dev", "eth0")
      ip_in(ns, "link", "set", "eth0", "up")
    end

    def ip(*args) = run("ip", *args)

    def ip_in(ns, *args) = run(*Netns.enter(ns), "ip", *args)

    def run(*argv)
      out, status = Open3.capture2e(*argv)
      raise Topology::Error, "#{argv.join(' ')}: #{out.strip}" unless status.success?
    end
  end
end
