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

  def test_every_option_is_documented
    Spindle::Config::OPTIONS.each do |option|
      refute_empty option.doc.to_s, "option #{option.name} has no doc"
    end
  end
end
