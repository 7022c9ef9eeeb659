/*
 * Spindle::WaitSet: one epoll set that several threads wait on (the threads
 * engine's pool: lib/spindle/engine/park.rb). Each socket is armed for one
 * readable event at a time (EPOLLONESHOT), so the kernel reports a ready
 * socket to one waiting thread only, and nobody else sees it until it is
 * armed again. Beside the sockets, an eventfd counts notifications
 * (EFD_SEMAPHORE): each #notify lets exactly one #wait return true.
 *
 *   set.arm(fd, id)     # report fd's next readable event as id (an Integer > 0)
 *   set.disarm(fd)      # forget fd (it may have been closed already)
 *   set.wait(timeout)   # id, true (a notification) or nil (timeout, signal)
 *   set.notify(n = 1)   # n more waits return true
 *   set.close
 *
 * #wait looks first, holding the GVL, for an event already there (an
 * epoll_wait that does not wait): under load the next request has usually
 * arrived by the time a thread is done with its last, and taking it then
 * costs no GVL handoff. It looks only within LOOK_WINDOW_NS (0.2 ms) of
 * taking the GVL back from its last wait, which a request that waits on a
 * database outlasts; after that it waits letting go of the GVL (at once,
 * when an event is there), and the threads that wait for the GVL get their
 * turn: one this set woke, which holds a request too, or one whose query
 * has returned. Looking every time, a thread that took request after
 * request kept a woken one waiting for Ruby's whole time slice (hello on
 * Ruby 3.3: p99 91 ms where it had been 2). Looking up to 8 times in a row,
 * new requests went ahead of those in progress (the Rails page at 2
 * processes: 0.85x); within 0.5 ms, the blog page lost a sixth on Ruby 3.1
 * (docs/PERFORMANCE.md). A thread that wakes for a notification another
 * thread took first waits again without taking the GVL back.
 */
#include "wait_set.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <ruby/thread.h>

#define NOTIFY_ID 0
#define LOOK_WINDOW_NS 200000

/* When this thread last took the GVL back from a wait (CLOCK_MONOTONIC). */
static __thread int64_t woke_at;

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

typedef struct {
  int epfd;
  int efd;
} wait_set_t;

static void wait_set_close_fds(wait_set_t *w) {
  if (w->efd >= 0) close(w->efd);
  if (w->epfd >= 0) close(w->epfd);
  w->efd = w->epfd = -1;
}

static void wait_set_free(void *ptr) {
  wait_set_close_fds(ptr);
  xfree(ptr);
}

static size_t wait_set_memsize(const void *ptr) { return sizeof(wait_set_t); }

static const rb_data_type_t wait_set_type = {
    "Spindle::WaitSet", {NULL, wait_set_free, wait_set_memsize}, NULL, NULL, RUBY_TYPED_FREE_IMMEDIATELY};

static VALUE wait_set_alloc(VALUE klass) {
  wait_set_t *w;
  VALUE self = TypedData_Make_Struct(klass, wait_set_t, &wait_set_type, w);
  w->epfd = w->efd = -1;
  return self;
}

static wait_set_t *get_wait_set(VALUE self) {
  wait_set_t *w;
  TypedData_Get_Struct(self, wait_set_t, &wait_set_type, w);
  if (w->epfd < 0) rb_raise(rb_eIOError, "closed WaitSet");
  return w;
}

static VALUE wait_set_initialize(VALUE self) {
  wait_set_t *w;
  TypedData_Get_Struct(self, wait_set_t, &wait_set_type, w);
  if (w->epfd >= 0) rb_raise(rb_eRuntimeError, "WaitSet already initialized");
  w->epfd = epoll_create1(EPOLL_CLOEXEC);
  if (w->epfd < 0) rb_sys_fail("epoll_create1");
  w->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK | EFD_SEMAPHORE);
  if (w->efd < 0) {
    int err = errno;
    wait_set_close_fds(w);
    errno = err;
    rb_sys_fail("eventfd");
  }
  struct epoll_event ev;
  memset(&ev, 0, sizeof ev);
  ev.events = EPOLLIN; /* level-triggered: readable while any notification is left */
  ev.data.u64 = NOTIFY_ID;
  if (epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->efd, &ev) < 0) {
    int err = errno;
    wait_set_close_fds(w);
    errno = err;
    rb_sys_fail("epoll_ctl");
  }
  return self;
}

/* False when fd is no longer open (a socket closed under us). */
static VALUE wait_set_arm(VALUE self, VALUE fd, VALUE id) {
  wait_set_t *w = get_wait_set(self);
  int sock = NUM2INT(fd);
  uint64_t key = NUM2ULL(id);
  if (key == NOTIFY_ID) rb_raise(rb_eArgError, "id must be > 0");
  struct epoll_event ev;
  memset(&ev, 0, sizeof ev);
  ev.events = EPOLLIN | EPOLLONESHOT;
  ev.data.u64 = key;
  /* Armed before (and reported since): MOD. New to the set: ADD. */
  if (epoll_ctl(w->epfd, EPOLL_CTL_MOD, sock, &ev) == 0) return Qtrue;
  if (errno == ENOENT && epoll_ctl(w->epfd, EPOLL_CTL_ADD, sock, &ev) == 0) return Qtrue;
  if (errno == EBADF || errno == ENOENT) return Qfalse;
  rb_sys_fail("epoll_ctl");
  return Qfalse; /* not reached */
}

static VALUE wait_set_disarm(VALUE self, VALUE fd) {
  wait_set_t *w = get_wait_set(self);
  struct epoll_event ev;
  memset(&ev, 0, sizeof ev);
  return epoll_ctl(w->epfd, EPOLL_CTL_DEL, NUM2INT(fd), &ev) == 0 ? Qtrue : Qfalse;
}

struct wait_args {
  int epfd;
  int efd;
  int timeout_ms;
  int n;     /* 1: got, 0: timeout, -1: error */
  int err;
  uint64_t key;
};

/* One epoll_wait of up to timeout_ms. True when it ended the wait: a
 * socket's event, a notification this thread consumed, nothing (n = 0) or
 * an error (n < 0, EINTR included). False: another thread took the
 * notification it saw. */
static int wait_once(struct wait_args *a, int timeout_ms) {
  struct epoll_event ev;
  int n = epoll_wait(a->epfd, &ev, 1, timeout_ms);
  a->n = n;
  if (n <= 0) {
    a->err = errno;
    return 1;
  }
  a->key = ev.data.u64;
  if (a->key != NOTIFY_ID) return 1;
  uint64_t one;
  return read(a->efd, &one, sizeof one) == (ssize_t)sizeof one;
}

/* Without the GVL: until wait_once ends the wait. */
static void *wait_nogvl(void *ptr) {
  struct wait_args *a = ptr;
  for (;;)
    if (wait_once(a, a->timeout_ms)) return NULL;
}

/* Holding the GVL: true when an event already there ended the wait (or,
 * with no timeout, nothing did). */
static int taken_at_once(struct wait_args *a) {
  if (a->timeout_ms > 0 && now_ns() - woke_at > LOOK_WINDOW_NS) return 0;
  return wait_once(a, 0) && (a->n != 0 || a->timeout_ms == 0);
}

static VALUE wait_set_wait(VALUE self, VALUE timeout) {
  wait_set_t *w = get_wait_set(self);
  double seconds = NUM2DBL(timeout);
  struct wait_args a;
  memset(&a, 0, sizeof a);
  a.epfd = w->epfd;
  a.efd = w->efd;
  a.timeout_ms = seconds <= 0 ? 0 : (seconds > 86400 ? 86400000 : (int)(seconds * 1000.0 + 0.5));
  if (!taken_at_once(&a)) {
    a.n = 0;
    if (a.timeout_ms > 0) {
      rb_thread_call_without_gvl(wait_nogvl, &a, RUBY_UBF_IO, NULL);
      woke_at = now_ns();
    }
  }
  if (a.n < 0 && a.err != EINTR) {
    errno = a.err;
    rb_sys_fail("epoll_wait");
  }
  if (a.n <= 0) return Qnil;
  return a.key == NOTIFY_ID ? Qtrue : ULL2NUM(a.key);
}

static VALUE wait_set_notify(int argc, VALUE *argv, VALUE self) {
  wait_set_t *w = get_wait_set(self);
  VALUE count;
  rb_scan_args(argc, argv, "01", &count);
  uint64_t n = NIL_P(count) ? 1 : NUM2ULL(count);
  if (n == 0) return self;
  if (write(w->efd, &n, sizeof n) < 0 && errno != EAGAIN) rb_sys_fail("write(eventfd)");
  return self;
}

static VALUE wait_set_close(VALUE self) {
  wait_set_t *w;
  TypedData_Get_Struct(self, wait_set_t, &wait_set_type, w);
  wait_set_close_fds(w);
  return Qnil;
}

static VALUE wait_set_closed_p(VALUE self) {
  wait_set_t *w;
  TypedData_Get_Struct(self, wait_set_t, &wait_set_type, w);
  return w->epfd < 0 ? Qtrue : Qfalse;
}

void sp_init_wait_set(VALUE mSpindle) {
  VALUE cWaitSet = rb_define_class_under(mSpindle, "WaitSet", rb_cObject);
  rb_define_alloc_func(cWaitSet, wait_set_alloc);
  rb_define_method(cWaitSet, "initialize", wait_set_initialize, 0);
  rb_define_method(cWaitSet, "arm", wait_set_arm, 2);
  rb_define_method(cWaitSet, "disarm", wait_set_disarm, 1);
  rb_define_method(cWaitSet, "wait", wait_set_wait, 1);
  rb_define_method(cWaitSet, "notify", wait_set_notify, -1);
  rb_define_method(cWaitSet, "close", wait_set_close, 0);
  rb_define_method(cWaitSet, "closed?", wait_set_closed_p, 0);
}
