class ChatChannel < ApplicationCable::Channel
  ROOM = "chat"

  def subscribed
    stream_from ROOM
    # Which process holds this socket: with several workers, the suite sends
    # its broadcast from another one, which reaches this socket only through
    # PostgreSQL's NOTIFY (config/cable.yml).
    transmit({ "worker" => Process.pid })
  end
end
