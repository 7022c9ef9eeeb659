import consumer from "channels/consumer"

// On the chat page only: once subscribed, post the page's broadcast form, and
// show every message the channel sends.
const form = document.getElementById("broadcast")

if (form) {
  consumer.subscriptions.create("ChatChannel", {
    connected() {
      fetch(form.action, { method: "POST", body: new FormData(form) })
    },

    received(data) {
      if (!data.text) return // the worker's pid, sent on subscribing

      const line = document.createElement("p")
      line.className = "message"
      line.textContent = `received: ${data.text}`
      document.getElementById("messages").append(line)
    }
  })
}
