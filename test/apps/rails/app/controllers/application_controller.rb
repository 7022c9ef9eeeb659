# frozen_string_literal: true

# ActionController::Base checks the authenticity token of every form post.
class ApplicationController < ActionController::Base
end
