# The chat page: its script subscribes to ChatChannel and, once subscribed,
# posts the page's broadcast form (app/javascript/channels/chat_channel.js).
class ChatsController < ApplicationController
  def show
  end
end
