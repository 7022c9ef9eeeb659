# frozen_string_literal: true

require "test_helper"

# docs/DESIGN.md's table of files is where a newcomer looks for the file that
# makes a decision, so every file under lib/ must be named there (issue 66:
# it named 78 of 121). A name in the table is a path from the repository
# (`lib/...`) or from lib/spindle/ (`http/forwarded.rb`); brace forms
# (`engine/{a,b}.rb`) and globs (`config/*.rb`) name each file they expand to.
class DesignDocTest < Minitest::Test
  ROOT = File.expand_path("../..", __dir__)
  DOC = File.join(ROOT, "docs", "DESIGN.md")

  def test_every_lib_file_is_named_in_the_table_of_files
    lib_files = Dir.chdir(ROOT) { Dir["lib/**/*"].select { |f| File.file?(f) } }.sort
    missing = lib_files.reject { |file| patterns.any? { |pattern| File.fnmatch?(pattern, file, File::FNM_PATHNAME) } }
    assert missing.empty?, "docs/DESIGN.md's table of files does not name:\n  #{missing.join("\n  ")}"
  end

  # The test itself: a brace form stands for each of its alternatives.
  def test_brace_forms_expand_to_each_alternative
    assert_equal %w[lib/rack/handler/spindle.rb lib/rackup/handler/spindle.rb],
                 expand("lib/rack{,up}/handler/spindle.rb")
    assert_equal %w[lib/spindle/engine/a.rb lib/spindle/engine/b.rb], expand("lib/spindle/engine/{a,b}.rb")
  end

  private

  # Every file name in a row of the table (either column), as a path from
  # the repository's root.
  def patterns
    rows = File.read(DOC).lines.grep(/\A\| `/)
    refute_empty rows, "docs/DESIGN.md has no table of files"
    names = rows.flat_map { |row| row.scan(%r{`([\w./{},*+-]+\.(?:rb|ru))`}).flatten }
    names.flat_map { |name| expand(name) }.map { |path| path.start_with?("lib/") ? path : "lib/spindle/#{path}" }
  end

  def expand(name)
    braces = name.match(/\{([^{}]*)\}/) or return [name]
    braces[1].split(",", -1).flat_map { |alternative| expand(braces.pre_match + alternative + braces.post_match) }
  end
end
