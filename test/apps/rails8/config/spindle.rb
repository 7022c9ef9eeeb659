# Read by `rails server -u spindle` and `bundle exec spindle` in this app, as
# Puma reads the config/puma.rb that rails new writes. Command-line flags win.
engine ENV.fetch("SPINDLE_ENGINE", "threads")
threads 1, Integer(ENV.fetch("RAILS_MAX_THREADS", "5"))
workers Integer(ENV.fetch("WEB_CONCURRENCY", "0"))
shutdown_timeout 10
