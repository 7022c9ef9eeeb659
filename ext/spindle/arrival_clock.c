/*
 * Spindle::ArrivalClock.first_byte_at(fd): when the kernel received the first
 * byte still unread on the socket fd, as a Process::CLOCK_MONOTONIC time
 * (Float seconds); :wait when no byte waits (a read would find nothing); nil
 * when one waits with no time noted, or the stream ended, or failed (the read
 * says which). lib/spindle/request/arrival_clock.rb says why and who calls it.
 *
 * The time is the one SO_TIMESTAMPNS notes for each packet as it arrives
 * (the listener sets it; accepted sockets inherit it), read with a one-byte
 * recvmsg(MSG_PEEK) that leaves the byte for the read that follows. The
 * kernel's clock is wall time: its distance from now is taken off now's
 * monotonic time, and a time from the future (the wall clock stepped back)
 * counts as now. Defined only where SO_TIMESTAMPNS exists (Linux).
 */
#include "arrival_clock.h"

#ifdef __linux__
#include <errno.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>

#ifdef SO_TIMESTAMPNS
static double seconds(const struct timespec *t) { return (double)t->tv_sec + (double)t->tv_nsec / 1e9; }

static VALUE sym_wait;

/* The kernel's receive time of the first unread byte (wall clock): 1 with
 * the time, 0 with none noted (or the end of the stream, or an error), -1
 * when no byte waits. */
static int peek_stamp(int fd, struct timespec *stamp) {
  char byte;
  union {
    char buf[CMSG_SPACE(sizeof(struct timespec))];
    struct cmsghdr align;
  } control;
  struct iovec iov = {&byte, 1};
  struct msghdr msg;
  memset(&msg, 0, sizeof(msg));
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control.buf;
  msg.msg_controllen = sizeof(control.buf);
  ssize_t got;
  do {
    got = recvmsg(fd, &msg, MSG_PEEK | MSG_DONTWAIT);
  } while (got < 0 && errno == EINTR);
  if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return -1;
  if (got <= 0) return 0; /* the end of the stream, or an error: the read says which */

  for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
      memcpy(stamp, CMSG_DATA(c), sizeof(*stamp));
      return stamp->tv_sec != 0 || stamp->tv_nsec != 0;
    }
  }
  return 0;
}

static VALUE first_byte_at(VALUE self, VALUE fd) {
  struct timespec stamp, wall, mono;
  int found = peek_stamp(NUM2INT(fd), &stamp);
  if (found < 0) return sym_wait;
  if (found == 0) return Qnil;

  clock_gettime(CLOCK_REALTIME, &wall);
  clock_gettime(CLOCK_MONOTONIC, &mono);
  double age = seconds(&wall) - seconds(&stamp);
  return DBL2NUM(seconds(&mono) - (age > 0 ? age : 0));
}
#endif
#endif

void sp_init_arrival_clock(VALUE mSpindle) {
#if defined(__linux__) && defined(SO_TIMESTAMPNS)
  VALUE mArrivalClock = rb_define_module_under(mSpindle, "ArrivalClock");
  sym_wait = ID2SYM(rb_intern("wait"));
  rb_define_module_function(mArrivalClock, "first_byte_at", first_byte_at, 1);
#endif
}
