# frozen_string_literal: true

# 20 posts for the benchmarks (bench/run rails and blog read the same table):
# `bin/rails db:seed`. Run again, it changes nothing. Each body is about
# 1,100 characters, so that ten of them make the blog page's ~15 KB.
if Post.none?
  sentence = "A post body long enough to look like an article, with a few words of everything. "
  now = Time.utc(2026, 1, 1)
  rows = (1..20).map do |i|
    { title: "Post number #{i}", body: "#{i}: #{sentence * 13}".strip, created_at: now + i * 3600, updated_at: now + i * 3600 }
  end
  Post.insert_all!(rows)
end
