# frozen_string_literal: true

require "socket"

class Topology
  # docs/deploy/nginx.conf or haproxy.cfg with its placeholders filled in,
  # written to the run directory, and the command that runs it. Only
  # addresses are filled in ({{listen}}, {{host}}, {{name}},
  # {{admin_socket}}); a line naming {{host}} is repeated once per host.
  class LbConfig
    DEPLOY = File.expand_path("../../../docs/deploy", __dir__)
    FILES = { nginx: "nginx.conf", haproxy: "haproxy.cfg" }.freeze
    PLACEHOLDER = /\{\{(\w+)\}\}/

    attr_reader :kind, :path, :admin_socket

    # hosts: [[name, "address:port"], ...]
    def initialize(kind, listen:, hosts:, dir:, template: nil)
      @kind = kind
      @dir = dir
      @admin_socket = File.join(dir, "haproxy.sock")
      template ||= File.read(File.join(DEPLOY, FILES.fetch(kind)))
      @path = File.join(dir, FILES.fetch(kind))
      File.write(@path, self.class.render(template, listen: listen, hosts: hosts, admin_socket: @admin_socket))
    end

    def self.render(template, listen:, hosts:, admin_socket: nil)
      template.each_line.flat_map do |line|
        next [line] unless line.match?(/\{\{host\}\}/) && !line.lstrip.start_with?("#")

        hosts.map { |name, host| line.gsub("{{host}}", host).gsub("{{name}}", name) }
      end.join.gsub(PLACEHOLDER) do
        case Regexp.last_match(1)
        when "listen" then listen
        when "admin_socket" then admin_socket
        else Regexp.last_match(0) # in a comment: left as written
        end
      end
    end

    # Foreground, with pid and logs in the run directory.
    def command
      case @kind
      when :nginx
        ["nginx", "-c", @path, "-e", File.join(@dir, "nginx-error.log"),
         "-g", "daemon off; pid #{File.join(@dir, 'nginx.pid')};"]
      when :haproxy
        ["haproxy", "-db", "-f", @path]
      end
    end

    # One runtime API command (e.g. "show stat"); the whole answer.
    def self.haproxy_command(socket_path, line)
      UNIXSocket.open(socket_path) do |socket|
        socket.write("#{line}\n")
        socket.read
      end
    end
  end
end
