# frozen_string_literal: true

require_relative "../rack_handler"

module Spindle
  # `rails server -u spindle` loads the handler after requiring the app's
  # config/application.rb, and before it prints its boot lines ("=> Booting
  # Spindle") and boots the app from config.ru. The allocator settings are
  # read at process start, so the handler re-executes the process once to set
  # them (MemorySetup); done in RackHandler.run, the re-executed process
  # booted the app a second time and printed the boot lines again. Under
  # `rails server` nothing that decides it comes later (it has no -O: only
  # config/spindle.rb and the environment), so it is done here, when the
  # handler is loaded, before Rails prints or boots anything.
  module RailsBoot
    module_function

    def reexec_early
      return unless rails_server?

      RackHandler.reexec_with_memory_settings(RackHandler.build_config(config: "config.ru"), nil)
    rescue Config::Error
      nil # RackHandler.run meets the same error, and says it in one line
    end

    # rails server has loaded its command and chdir'd to the app's root,
    # where its config.ru is.
    def rails_server?
      defined?(::Rails::Command::ServerCommand) && defined?(::Rails::Server) ? true : false
    end
  end
end
