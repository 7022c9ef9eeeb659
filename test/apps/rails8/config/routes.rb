Rails.application.routes.draw do
  resources :posts

  # What the suite drives besides the scaffold: an Action Cable chat (the page,
  # and a broadcast from a plain request), a server-sent events stream, a
  # multipart upload and a send_file download.
  resource :chat, only: :show
  resources :broadcasts, only: :create
  get "events" => "events#index"
  resources :uploads, only: %i[new create]
  get "download" => "downloads#show"

  # Reveal health status on /up that returns 200 if the app boots with no exceptions, otherwise 500.
  # Can be used by load balancers and uptime monitors to verify that the app is live.
  get "up" => "rails/health#show", as: :rails_health_check

  root "posts#index"
end
