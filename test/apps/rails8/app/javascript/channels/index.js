// Import all the channels to be used by Action Cable
import "channels/chat_channel"
