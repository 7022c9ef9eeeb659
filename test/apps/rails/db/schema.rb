# frozen_string_literal: true

ActiveRecord::Schema[7.2].define(version: 1) do
  create_table "posts", force: :cascade do |t|
    t.string "title", null: false
    t.text "body"
    t.timestamps
  end
end
