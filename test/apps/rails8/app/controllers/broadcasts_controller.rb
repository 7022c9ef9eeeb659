# A broadcast from an ordinary request, with the chat page's authenticity
# token, as a form post or a fetch from the page would send it.
class BroadcastsController < ApplicationController
  def create
    ActionCable.server.broadcast(ChatChannel::ROOM, { "text" => params.expect(:text), "worker" => Process.pid })
    render plain: "broadcast from #{Process.pid}\n"
  end
end
