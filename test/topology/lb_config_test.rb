# frozen_string_literal: true

require "minitest/autorun"
require "tmpdir"
require_relative "../support/topology"

# docs/deploy/'s configs, rendered as the multi-host tests render them: one
# server line per host, every placeholder filled, and accepted by nginx -t
# and haproxy -c (no namespaces needed, so this runs in every lane).
class LbConfigTest < Minitest::Test
  HOSTS = [%w[h1 10.77.0.11:9292], %w[h2 10.77.0.12:9292], %w[h3 10.77.0.13:9292]].freeze

  def setup
    @dir = Dir.mktmpdir("spindle-lb-config")
  end

  def teardown
    FileUtils.rm_rf(@dir)
  end

  def test_nginx_conf_renders_a_server_line_per_host_and_nginx_accepts_it
    config = Topology::LbConfig.new(:nginx, listen: "127.0.0.1:18080", hosts: HOSTS, dir: @dir)
    text = File.read(config.path)
    assert_equal HOSTS.map { |_, h| "server #{h} max_fails=1 fail_timeout=2s;" }, text.scan(/^\s*(server \S+ max_fails.*;)$/).flatten
    assert_includes text, "listen 127.0.0.1:18080"
    refute_match(/^[^#]*\{\{/, text, "a placeholder left outside comments")
    out = `nginx -t -c #{config.path} -e #{@dir}/error.log -g 'pid #{@dir}/nginx.pid;' 2>&1`
    assert $?.success?, "nginx -t refused the rendered nginx.conf:\n#{out}" # rubocop:disable Style/SpecialGlobalVars
  end

  def test_haproxy_cfg_renders_a_server_line_per_host_and_haproxy_accepts_it
    config = Topology::LbConfig.new(:haproxy, listen: "127.0.0.1:18080", hosts: HOSTS, dir: @dir)
    text = File.read(config.path)
    assert_equal HOSTS.map { |n, h| "server #{n} #{h} check" }, text.scan(/^\s*(server \S+ \S+ check)$/).flatten
    assert_includes text, "stats socket #{config.admin_socket} "
    refute_match(/^[^#]*\{\{/, text, "a placeholder left outside comments")
    out = `haproxy -c -f #{config.path} 2>&1`
    assert $?.success?, "haproxy -c refused the rendered haproxy.cfg:\n#{out}" # rubocop:disable Style/SpecialGlobalVars
  end
end
