# frozen_string_literal: true

module Spindle
  class Listener
    # Turns the system error a bind raised into the one line an operator reads
    # ("cannot bind unix:///run/x/app.sock: directory /run/x does not exist").
    # Ruby's own messages name the syscall and sometimes the wrong one (a UNIX
    # socket in a missing directory reads "connect(2)"), and they would come
    # with a backtrace that says nothing more.
    module BindFailure
      module_function

      # uri: the parsed bind; shown: as the operator wrote it.
      def message(uri, shown, error)
        "cannot bind #{shown}: #{reason(uri, error)}"
      end

      # One address of a name skipped while others bound (TcpBind): said, so
      # an operator who expected clients on it knows why none arrive.
      # "tcp://localhost:3000: not listening on [::1]: IPv6 is off on this machine"
      def skipped(shown, address, error)
        ip = address.ipv6? ? "[#{address.ip_address}]" : address.ip_address
        why = if error.is_a?(Errno::EADDRNOTAVAIL) then "not an address of this machine"
              else "IPv#{address.ipv6? ? 6 : 4} is off on this machine (#{system_reason(error)})"
              end
        "#{shown}: not listening on #{ip}: #{why}"
      end

      def reason(uri, error)
        case error
        when Errno::EADDRINUSE then "address already in use"
        when Errno::EACCES, Errno::EPERM then permission(uri)
        when Errno::ENOENT then "directory #{File.dirname(path_of(uri))} does not exist"
        when Errno::ENOTDIR then "a component of #{File.dirname(path_of(uri))} is not a directory"
        when Errno::EROFS then "#{File.dirname(path_of(uri))} is on a read-only file system"
        when Errno::EADDRNOTAVAIL then "#{uri.hostname} is not an address of this machine"
        when SocketError then "cannot resolve #{uri.hostname.inspect} (#{error.message})"
        when ArgumentError then error.message # e.g. a UNIX socket path longer than 107 bytes
        else system_reason(error)
        end
      end

      def permission(uri)
        if uri.scheme == "unix"
          return "permission denied (user #{user} cannot create a socket in #{File.dirname(path_of(uri))})"
        end
        return "permission denied" unless uri.port.positive? && uri.port < unprivileged_start

        "permission denied: port #{uri.port} is privileged (below #{unprivileged_start}); " \
          "binding it needs root or CAP_NET_BIND_SERVICE"
      end

      # Linux lets the administrator move the privileged range's end.
      def unprivileged_start
        Integer(File.read("/proc/sys/net/ipv4/ip_unprivileged_port_start").strip)
      rescue SystemCallError, ArgumentError
        1024
      end

      def user
        require "etc"
        Etc.getpwuid(Process.euid)&.name || Process.euid.to_s
      rescue ArgumentError
        Process.euid.to_s
      end

      def path_of(uri) = "#{uri.host}#{uri.path}"

      # "Errno::EMFILE: Too many open files - socket(2)" → "too many open files".
      def system_reason(error)
        text = error.message.sub(/ - .*\z/m, "")
        text.empty? ? error.class.name : text.sub(/\A\p{Upper}(?=\p{Lower})/, &:downcase)
      end
    end
  end
end
