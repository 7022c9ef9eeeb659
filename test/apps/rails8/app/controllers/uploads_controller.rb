require "digest"

# A multipart upload through a form with the authenticity token: answers the
# uploaded file's size and SHA-256, which the suite compares with its own.
class UploadsController < ApplicationController
  def new
  end

  def create
    file = params.expect(:file)
    digest = Digest::SHA256.file(file.tempfile.path).hexdigest
    render plain: "#{file.original_filename} size=#{file.size} sha256=#{digest}\n"
  end
end
