# frozen_string_literal: true

Rails.application.routes.draw do
  resources :posts
  # Waits in the database for a lock the test holds: see WaitsController.
  get "wait", to: "waits#show"
  # One pg_sleep, settled when a request deadline cuts it short: see SleepsController.
  get "sleep", to: "sleeps#show"
end
