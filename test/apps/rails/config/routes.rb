# frozen_string_literal: true

Rails.application.routes.draw do
  resources :posts
  # Waits in the database for a lock the test holds: see WaitsController.
  get "wait", to: "waits#show"
end
