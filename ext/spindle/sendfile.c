/*
 * Spindle::HTTP::FileBody.sendfile(out_fd, in_fd, count): sendfile(2) from
 * in_fd's own position (the kernel advances it) to out_fd, a non-blocking
 * socket, for lib/spindle/http/file_body.rb. Returns the bytes sent (0: the
 * file has ended), or :wait_writable when the socket is full (EAGAIN): the
 * caller waits for the socket as after write_nonblock(exception: false).
 * Any other failure raises SystemCallError with its errno (Errno::EPIPE for a
 * client gone). EINTR is retried after Ruby's own interrupts are handled.
 *
 * Ruby has no sendfile of its own that never waits (IO.copy_stream waits for
 * the socket); Fiddle, which called it before, warns on Ruby 3.4 and leaves
 * the default gems after it. Defined only where sendfile(2) has this form
 * (Linux); elsewhere FileBody copies through a buffer.
 */
#include "sendfile.h"

#ifdef __linux__
#include <errno.h>
#include <sys/sendfile.h>
#include <ruby/thread.h>

static VALUE sym_wait_writable;

typedef struct {
  int out_fd, in_fd;
  size_t count;
  ssize_t sent;
  int error;
} sendfile_call;

/* Without the GVL: the socket never blocks, but reading a file that is not
 * in the page cache waits on the disk, and other threads may run meanwhile. */
static void *sendfile_without_gvl(void *data) {
  sendfile_call *call = data;
  call->sent = sendfile(call->out_fd, call->in_fd, NULL, call->count);
  call->error = call->sent < 0 ? errno : 0;
  return NULL;
}

static VALUE file_body_sendfile(VALUE self, VALUE out_fd, VALUE in_fd, VALUE count) {
  long n = NUM2LONG(count);
  if (n < 0) rb_raise(rb_eArgError, "negative count: %ld", n);
  sendfile_call call = {NUM2INT(out_fd), NUM2INT(in_fd), (size_t)n, 0, 0};
  for (;;) {
    rb_thread_call_without_gvl(sendfile_without_gvl, &call, RUBY_UBF_IO, NULL);
    if (call.sent >= 0) return SSIZET2NUM(call.sent);
    if (call.error == EAGAIN || call.error == EWOULDBLOCK) return sym_wait_writable;
    if (call.error != EINTR) rb_syserr_fail(call.error, "sendfile");
    rb_thread_check_ints(); /* Thread#raise, a signal handler: may raise here */
  }
}

void sp_init_sendfile(VALUE mHTTP) {
  VALUE cFileBody = rb_define_class_under(mHTTP, "FileBody", rb_cObject);
  sym_wait_writable = ID2SYM(rb_intern("wait_writable"));
  rb_define_singleton_method(cFileBody, "sendfile", file_body_sendfile, 3);
}
#else
void sp_init_sendfile(VALUE mHTTP) {}
#endif
