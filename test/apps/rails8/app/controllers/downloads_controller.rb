# send_file of a large file the suite writes at test time (DOWNLOAD_FILE):
# Rails hands the server a body with #to_path, which it may send with sendfile.
class DownloadsController < ApplicationController
  def show
    path = ENV["DOWNLOAD_FILE"]
    return head(:not_found) unless path && File.file?(path)

    send_file path, type: "application/octet-stream"
  end
end
