# frozen_string_literal: true

require "test_helper"
require "spindle/config/docs"

# docs/CONFIG.md is generated from the option list; this fails when they drift.
class ConfigDocsTest < Minitest::Test
  def test_config_md_matches_the_options_in_code
    path = File.expand_path("../../docs/CONFIG.md", __dir__)
    assert_equal Spindle::Config::Docs.markdown, File.read(path),
                 "docs/CONFIG.md is stale: run bin/docs"
  end

  # Issue #11, item 23: the hooks were documented nowhere an operator looks.
  # The hooks are the DSL's methods that are neither options nor bind nor
  # sidecar (which add to the binds and sidecars options).
  def test_every_hook_is_documented
    markdown = File.read(File.expand_path("../../docs/CONFIG.md", __dir__))
    hooks = Spindle::Config::DSL.public_instance_methods(false) - Spindle::Config::BY_NAME.keys -
            %i[bind sidecar values]
    assert_equal 4, hooks.size, hooks.inspect
    hooks.each { |hook| assert_match(/^\| `#{hook} \{/, markdown, "CONFIG.md should document #{hook}") }
  end

  def test_every_option_is_documented
    Spindle::Config::OPTIONS.each do |option|
      refute_empty option.doc.to_s, "option #{option.name} has no doc"
    end
  end
end
