/*
 * open_loop.c: the overload scenario's open-loop HTTP/1.1 client
 * (Bench::OpenLoop, open_loop.rb, builds and runs it, and says why each rule
 * is as it is). In C: a Ruby client cost 0.3-0.6 core at 1,000 req/s on a
 * 2-core machine it shares with the server under test, and could not hold
 * the blog page's ~12,000 req/s at all.
 *
 * Request n is due at start + n / rate whatever the server does; its latency
 * counts from that slot (no coordinated omission) and from its send. One
 * thread, epoll, non-blocking sockets, up to max_connections keep-alive
 * connections to 127.0.0.1:port, opened as the schedule needs them; a due
 * request waits for a free one. A request not answered `timeout` seconds
 * after its slot is a timeout, sent or not; nothing runs past
 * seconds + timeout.
 *
 * Usage: open_loop --port N --path /p --rate R --seconds S
 *                  --max-connections N [--timeout S] [--stamp]
 * Prints one JSON object on stdout (see print_result). Bad arguments: a
 * message on stderr, exit 2.
 *
 * An idle keep-alive connection the server closes is dropped when the
 * close arrives, not counted as an error.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define LATE 0.001        /* a send more than this after its slot is late */
#define MAX_WAIT 0.05     /* s: the longest epoll wait, as the Ruby client's select */
#define SPARE_FDS 16      /* stdio, epoll, and some slack beside the connections */
#define MAX_PATH_LEN 4096
#define MAX_REQUESTS 100000000LL /* two doubles each are kept: ~1.6 GB at this bound */

/* ---- options ---------------------------------------------------------- */

typedef struct {
  int port;
  const char *path;
  double rate, seconds, timeout;
  long max_connections;
  bool stamp;
} Options;

static void usage_error(const char *fmt, const char *arg) {
  fprintf(stderr, "open_loop: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\nusage: open_loop --port N --path /PATH --rate REQ_PER_S --seconds S "
                  "--max-connections N [--timeout S] [--stamp]\n");
  exit(2);
}

static double parse_positive(const char *name, const char *s) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || *end || !isfinite(v) || v <= 0) usage_error("%s wants a number above 0", name);
  return v;
}

static long parse_count(const char *name, const char *s, long max) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < 1 || v > max) usage_error("%s wants a whole number in range", name);
  return v;
}

/* The path goes into the request line as given: no spaces or control bytes. */
static const char *parse_path(const char *s) {
  size_t n = strlen(s);
  if (s[0] != '/' || n > MAX_PATH_LEN) usage_error("--path wants /something (got %s)", s);
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)s[i] <= 0x20 || s[i] == 0x7f) usage_error("--path has a space or control byte: %s", s);
  return s;
}

static Options parse_options(int argc, char **argv) {
  Options o = {.timeout = 10};
  bool seen[5] = {false};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--stamp")) { o.stamp = true; continue; }
    if (i + 1 >= argc) usage_error("%s wants a value", a);
    const char *v = argv[++i];
    if (!strcmp(a, "--port")) { o.port = (int)parse_count(a, v, 65535); seen[0] = true; }
    else if (!strcmp(a, "--path")) { o.path = parse_path(v); seen[1] = true; }
    else if (!strcmp(a, "--rate")) { o.rate = parse_positive(a, v); seen[2] = true; }
    else if (!strcmp(a, "--seconds")) { o.seconds = parse_positive(a, v); seen[3] = true; }
    else if (!strcmp(a, "--max-connections")) { o.max_connections = parse_count(a, v, 1000000); seen[4] = true; }
    else if (!strcmp(a, "--timeout")) o.timeout = parse_positive(a, v);
    else usage_error("unknown argument %s", a);
  }
  static const char *required[] = {"--port", "--path", "--rate", "--seconds", "--max-connections"};
  for (int k = 0; k < 5; k++)
    if (!seen[k]) usage_error("%s is required", required[k]);
  if (o.rate * o.seconds > (double)MAX_REQUESTS) usage_error("%s: rate x seconds is too many requests", "--rate");
  return o;
}

/* ---- connections and their responses ---------------------------------- */

enum conn_state { CONNECTING, OPEN };
enum phase { HEAD, BODY };
enum body_kind { BY_LENGTH, CHUNKED, TO_EOF };
enum chunk_step { CHUNK_SIZE, CHUNK_DATA, CHUNK_TRAILER };
enum outcome { NEED_MORE, DONE };

typedef struct Conn {
  int fd;
  enum conn_state state;
  struct Conn *prev, *next; /* in the busy list (send order) or the idle one */
  bool busy;                /* a request is on it (sent, or waiting for the connect) */
  bool connect_failed;
  double slot, sent;
  /* The response being read. Only the head is kept; the body is counted. */
  enum phase phase;
  char *head;
  size_t head_len, head_cap, scanned;
  int status;
  bool close_after;
  enum body_kind body;
  uint64_t left;            /* BY_LENGTH: body bytes; CHUNK_DATA: chunk bytes + CRLF */
  enum chunk_step chunk;
  uint64_t chunk_size;
  bool size_digits;         /* still in the chunk size's leading hex digits */
  char last;                /* the chunk size line's previous byte */
  int crlfs;                /* CHUNK_TRAILER: bytes of "\r\n\r\n" matched */
} Conn;

typedef struct {
  Conn *first, *last;
  long count;
} List;

static void list_push(List *l, Conn *c) { /* at the end */
  c->prev = l->last;
  c->next = NULL;
  if (l->last) l->last->next = c; else l->first = c;
  l->last = c;
  l->count++;
}

static void list_remove(List *l, Conn *c) {
  if (c->prev) c->prev->next = c->next; else l->first = c->next;
  if (c->next) c->next->prev = c->prev; else l->last = c->prev;
  c->prev = c->next = NULL;
  l->count--;
}

/* ---- the run's state --------------------------------------------------- */

static Options opt;
static struct sockaddr_in addr;
static int epfd;
static char request_head[MAX_PATH_LEN + 128]; /* "GET path HTTP/1.1\r\nHost: ...\r\n" */
static size_t request_head_len;

static double start, wall_start, deadline;
static long long total, next_slot, pending_from; /* slots [pending_from, next_slot) are due, unsent */
static List busy, idle, spare;                 /* spare: closed Conns kept for reuse */

static long long statuses[1000];
static double *ok_latencies, *ok_from_send;
static long long ok_count, timeouts, errors, late_sends, connections_opened;
static double last_ok = -1;

static double clock_seconds(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double now(void) { return clock_seconds(CLOCK_MONOTONIC); }

static double slot_time(long long n) { return start + n / opt.rate; }

static void *xrealloc(void *p, size_t n) {
  void *q = realloc(p, n);
  if (!q) { fprintf(stderr, "open_loop: out of memory\n"); exit(1); }
  return q;
}

/* ---- the response parser ---------------------------------------------- */

/* Ruby's \s, which the Ruby client's header patterns skip. */
static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v'; }

static int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* The value of header `name` (with its colon) if the line at h starts with
 * it: the first byte after the colon and any spaces, else NULL. */
static const char *header_value(const char *h, const char *end, const char *name) {
  size_t n = strlen(name);
  if ((size_t)(end - h) < n || strncasecmp(h, name, n)) return NULL;
  h += n;
  while (h < end && is_space(*h)) h++;
  return h;
}

static bool line_has(const char *h, const char *end, const char *word) {
  size_t n = strlen(word);
  for (; h + n <= end && *h != '\n'; h++)
    if (!strncasecmp(h, word, n)) return true;
  return false;
}

/* "HTTP/1.x NNN" (any case) gives NNN; anything else 0, as the Ruby client. */
static int parse_status(const char *h, size_t len) {
  if (len < 12 || strncasecmp(h, "http/1.", 7) || (h[7] != '0' && h[7] != '1') || h[8] != ' ') return 0;
  for (int i = 9; i < 12; i++)
    if (h[i] < '0' || h[i] > '9') return 0;
  return (h[9] - '0') * 100 + (h[10] - '0') * 10 + (h[11] - '0');
}

/* The headers the client acts on, first match wins as in the Ruby client:
 * Content-Length, else chunked Transfer-Encoding, else a body to EOF. */
static void parse_head(Conn *c, size_t head_end) {
  const char *h = c->head, *end = c->head + head_end;
  bool has_length = false, chunked = false;
  uint64_t length = 0;
  c->status = parse_status(h, head_end);
  c->close_after = false;
  for (const char *line = h; line < end; line++) {
    const char *v;
    if ((v = header_value(line, end, "content-length:")) && !has_length && v < end && *v >= '0' && *v <= '9') {
      has_length = true;
      for (; v < end && *v >= '0' && *v <= '9' && length < (UINT64_C(1) << 60); v++) length = length * 10 + (uint64_t)(*v - '0');
    } else if ((v = header_value(line, end, "transfer-encoding:"))) {
      chunked = chunked || line_has(v, end, "chunked");
    } else if ((v = header_value(line, end, "connection:"))) {
      c->close_after = c->close_after || ((size_t)(end - v) >= 5 && !strncasecmp(v, "close", 5));
    }
    line = memchr(line, '\n', (size_t)(end - line));
    if (!line) break;
  }
  c->body = has_length ? BY_LENGTH : chunked ? CHUNKED : TO_EOF;
  c->left = length;
  c->chunk = CHUNK_SIZE;
  c->chunk_size = 0;
  c->size_digits = true;
  c->last = 0;
}

/* One byte of a chunk size line: its leading hex digits are the size (the
 * rest, an extension, is ignored); its CRLF starts the data, or the
 * trailers after the zero chunk. */
static void chunk_size_byte(Conn *c, char b) {
  if (c->last == '\r' && b == '\n') {
    if (c->chunk_size == 0) {
      c->chunk = CHUNK_TRAILER;
      c->crlfs = 2; /* the line's own CRLF: "0\r\n\r\n" ends the body */
    } else {
      c->chunk = CHUNK_DATA;
      c->left = c->chunk_size + 2;
    }
    c->chunk_size = 0;
    c->size_digits = true;
    c->last = 0;
    return;
  }
  int d = hex_value(b);
  if (c->size_digits && d >= 0 && c->chunk_size < (UINT64_C(1) << 56)) c->chunk_size = c->chunk_size * 16 + (uint64_t)d;
  else c->size_digits = false;
  c->last = b;
}

/* Walks a chunked body to the zero chunk and the blank line after its
 * trailers, without keeping it. */
static enum outcome chunked_feed(Conn *c, const char *p, size_t n) {
  for (size_t i = 0; i < n;) {
    if (c->chunk == CHUNK_DATA) {
      uint64_t take = c->left < n - i ? c->left : n - i;
      c->left -= take;
      i += take;
      if (c->left == 0) c->chunk = CHUNK_SIZE;
    } else if (c->chunk == CHUNK_SIZE) {
      chunk_size_byte(c, p[i++]);
    } else {
      char b = p[i++];
      if (b == "\r\n\r\n"[c->crlfs]) c->crlfs++;
      else c->crlfs = b == '\r' ? 1 : 0;
      if (c->crlfs == 4) return DONE;
    }
  }
  return NEED_MORE;
}

static enum outcome body_feed(Conn *c, const char *p, size_t n) {
  switch (c->body) {
  case BY_LENGTH: {
    uint64_t take = c->left < n ? c->left : n;
    c->left -= take;
    return c->left == 0 ? DONE : NEED_MORE;
  }
  case CHUNKED: return chunked_feed(c, p, n);
  default: return NEED_MORE; /* TO_EOF: done at the close */
  }
}

static void head_append(Conn *c, const char *p, size_t n) {
  if (c->head_len + n > c->head_cap) {
    while (c->head_len + n > c->head_cap) c->head_cap = c->head_cap ? c->head_cap * 2 : 1024;
    c->head = xrealloc(c->head, c->head_cap);
  }
  memcpy(c->head + c->head_len, p, n);
  c->head_len += n;
}

/* Bytes read from the connection, fed to the parser: the head is kept
 * until its blank line, a 1xx interim response is skipped, then the body
 * is counted. Bytes past the response are dropped (no pipelining). */
static enum outcome feed(Conn *c, const char *p, size_t n) {
  if (c->phase == BODY) return body_feed(c, p, n);
  head_append(c, p, n);
  for (;;) {
    size_t from = c->scanned >= 3 ? c->scanned - 3 : 0;
    char *e = memmem(c->head + from, c->head_len - from, "\r\n\r\n", 4);
    if (!e) {
      c->scanned = c->head_len;
      return NEED_MORE;
    }
    size_t head_end = (size_t)(e - c->head), rest = c->head_len - head_end - 4;
    parse_head(c, head_end);
    if (c->status >= 100 && c->status <= 199) { /* interim (103 Early Hints): read on */
      memmove(c->head, e + 4, rest);
      c->head_len = rest;
      c->scanned = 0;
      continue;
    }
    c->phase = BODY;
    c->head_len = 0;
    return body_feed(c, e + 4, rest); /* e + 4 stays valid: head is not written until the next request */
  }
}

/* ---- connection life --------------------------------------------------- */

static void close_conn(Conn *c) {
  if (c->busy) list_remove(&busy, c); else list_remove(&idle, c);
  close(c->fd); /* also takes it out of epoll */
  c->busy = false;
  list_push(&spare, c);
}

static void fail_request(Conn *c) {
  errors++;
  close_conn(c);
}

static void record(Conn *c) {
  statuses[c->status]++;
  if (c->status < 200 || c->status > 299) return;
  last_ok = now();
  ok_latencies[ok_count] = last_ok - c->slot;
  ok_from_send[ok_count++] = last_ok - c->sent;
}

static void finish(Conn *c, bool eof) {
  record(c);
  if (eof || c->close_after) {
    close_conn(c);
    return;
  }
  list_remove(&busy, c);
  c->busy = false;
  list_push(&idle, c);
}

static void watch(Conn *c, int op, uint32_t events) {
  struct epoll_event ev = {.events = events, .data.ptr = c};
  if (epoll_ctl(epfd, op, c->fd, &ev)) { perror("open_loop: epoll_ctl"); exit(1); }
}

/* A new connection, connected or on its way (connect_failed if the kernel
 * refused it at once: the request given to it is an error). */
static Conn *open_conn(void) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) { perror("open_loop: socket"); return NULL; }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  connections_opened++;
  Conn *c = spare.first;
  if (c) list_remove(&spare, c);
  else c = calloc(1, sizeof *c);
  if (!c) { fprintf(stderr, "open_loop: out of memory\n"); exit(1); }
  c->fd = fd;
  c->connect_failed = false;
  int r = connect(fd, (struct sockaddr *)&addr, sizeof addr);
  c->state = r == 0 ? OPEN : CONNECTING;
  if (r && errno != EINPROGRESS) c->connect_failed = true;
  else watch(c, EPOLL_CTL_ADD, EPOLLIN); /* EPOLLOUT only if the first send finds it still connecting */
  return c;
}

/* Sends the request on c; stamped with the send's wall-clock time, as a
 * proxy stamps the time a request reached it. A connect under way is tried
 * at once too: on loopback it is nearly always done by then, which saves
 * a wait for EPOLLOUT per connection (each 503 costs one). */
static void send_request(Conn *c) {
  char buf[sizeof request_head + 64];
  c->sent = now();
  memcpy(buf, request_head, request_head_len);
  size_t len = request_head_len;
  if (opt.stamp)
    len += (size_t)snprintf(buf + len, sizeof buf - len, "X-Request-Start: t=%.6f\r\n", wall_start + c->sent - start);
  memcpy(buf + len, "\r\n", 2);
  len += 2;
  ssize_t n = send(c->fd, buf, len, MSG_NOSIGNAL);
  if (n == (ssize_t)len) c->state = OPEN;
  else if (n < 0 && errno == EAGAIN && c->state == CONNECTING) watch(c, EPOLL_CTL_MOD, EPOLLIN | EPOLLOUT);
  else fail_request(c); /* short into an empty buffer: broken */
}

static void connected(Conn *c) {
  int err = 0;
  socklen_t n = sizeof err;
  if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &n) || err) {
    fail_request(c);
    return;
  }
  watch(c, EPOLL_CTL_MOD, EPOLLIN);
  send_request(c);
}

static void readable(Conn *c) {
  static char buf[65536];
  ssize_t n = read(c->fd, buf, sizeof buf);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  if (!c->busy) { /* idle: the server closed it (or said something unasked) */
    close_conn(c);
    return;
  }
  if (n < 0) fail_request(c);
  else if (n == 0) c->phase == BODY && c->body == TO_EOF ? finish(c, true) : fail_request(c);
  else if (feed(c, buf, (size_t)n) == DONE) finish(c, false);
}

static void on_event(struct epoll_event *ev) {
  Conn *c = ev->data.ptr;
  if (c->state == CONNECTING) connected(c);
  else if (ev->events & (EPOLLIN | EPOLLHUP | EPOLLERR)) readable(c);
}

/* ---- the schedule ------------------------------------------------------ */

/* A due request is given up at slot + timeout: a pending one is dropped, an
 * in-flight one closes its connection. Both lists are in slot order, so
 * only their heads are looked at. */
static void expire(double t) {
  while (pending_from < next_slot && slot_time(pending_from) + opt.timeout <= t) {
    timeouts++;
    pending_from++;
  }
  while (busy.first && busy.first->slot + opt.timeout <= t) {
    timeouts++;
    close_conn(busy.first);
  }
}

static Conn *free_connection(void) {
  Conn *c = idle.last; /* the most recently used: its socket is warmest */
  if (c) {
    list_remove(&idle, c);
    return c;
  }
  return busy.count < opt.max_connections ? open_conn() : NULL;
}

static void send_pending(double t) {
  Conn *c;
  while (pending_from < next_slot && (c = free_connection())) {
    double slot = slot_time(pending_from++);
    if (t - slot > LATE) late_sends++;
    c->slot = slot;
    c->sent = t;
    c->phase = HEAD;
    c->head_len = c->scanned = 0;
    c->busy = true;
    list_push(&busy, c);
    if (c->connect_failed) fail_request(c);
    else send_request(c);
  }
}

static void wait_events(double t) {
  double wake = deadline;
  if (next_slot < total && slot_time(next_slot) < wake) wake = slot_time(next_slot);
  if (pending_from < next_slot && slot_time(pending_from) + opt.timeout < wake) wake = slot_time(pending_from) + opt.timeout;
  if (busy.first && busy.first->slot + opt.timeout < wake) wake = busy.first->slot + opt.timeout;
  double wait = wake - t;
  if (wait > MAX_WAIT) wait = MAX_WAIT;
  if (wait < 0) wait = 0;

  static struct epoll_event events[512];
  /* epoll_pwait2 takes the wait in ns: epoll_wait's whole milliseconds would
   * make a send at 10,000 req/s up to a millisecond late, or spin. */
  struct timespec ts = {.tv_sec = (time_t)wait, .tv_nsec = (long)((wait - (time_t)wait) * 1e9)};
  int n = (int)syscall(SYS_epoll_pwait2, epfd, events, 512, &ts, NULL, 0);
  if (n < 0 && errno == ENOSYS) n = epoll_wait(epfd, events, 512, (int)ceil(wait * 1000)); /* before Linux 5.11 */
  if (n < 0 && errno != EINTR) { perror("open_loop: epoll_wait"); exit(1); }
  for (int i = 0; i < n; i++) on_event(&events[i]);
}

static void run(void) {
  while (true) {
    double t = now();
    if (t >= deadline) break;
    while (next_slot < total && slot_time(next_slot) <= t) next_slot++;
    expire(t);
    send_pending(t);
    if (next_slot >= total && pending_from == next_slot && busy.count == 0) break;
    wait_events(t);
  }
  /* At seconds + timeout: whatever is left, due or not, was not answered in time. */
  timeouts += (next_slot - pending_from) + busy.count + (total - next_slot);
  while (busy.first) close_conn(busy.first);
  while (idle.first) close_conn(idle.first);
}

/* ---- setup and output -------------------------------------------------- */

/* Each connection is a descriptor: raise the soft limit (and the hard one,
 * if allowed) to what max_connections needs, or use fewer and say so. */
static void fit_descriptors(void) {
  struct rlimit rl;
  rlim_t need = (rlim_t)opt.max_connections + SPARE_FDS;
  if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur >= need) return;
  struct rlimit want = {need, rl.rlim_max >= need ? rl.rlim_max : need};
  if (setrlimit(RLIMIT_NOFILE, &want) == 0) return;
  want.rlim_cur = want.rlim_max = rl.rlim_max;
  if (setrlimit(RLIMIT_NOFILE, &want) == 0) rl.rlim_cur = rl.rlim_max;
  long usable = (long)rl.rlim_cur - SPARE_FDS;
  if (usable < 1) { fprintf(stderr, "open_loop: RLIMIT_NOFILE %ld leaves no descriptor for a connection\n", (long)rl.rlim_cur); exit(2); }
  fprintf(stderr, "open_loop: RLIMIT_NOFILE is %ld and cannot be raised to %ld: at most %ld connections, not %ld\n",
          (long)rl.rlim_cur, (long)need, usable, opt.max_connections);
  opt.max_connections = usable;
}

static void setup(int argc, char **argv) {
  opt = parse_options(argc, argv);
  fit_descriptors();
  signal(SIGPIPE, SIG_IGN);
  addr.sin_family = AF_INET;
  addr.sin_port = htons((uint16_t)opt.port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  request_head_len = (size_t)snprintf(request_head, sizeof request_head, "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n", opt.path, opt.port);
  total = llround(opt.rate * opt.seconds);
  ok_latencies = xrealloc(NULL, sizeof(double) * (size_t)(total + 1));
  ok_from_send = xrealloc(NULL, sizeof(double) * (size_t)(total + 1));
  epfd = epoll_create1(EPOLL_CLOEXEC);
  if (epfd < 0) { perror("open_loop: epoll_create1"); exit(1); }
}

static void print_array(const char *name, const double *v, long long n) {
  printf("\"%s\":[", name);
  for (long long i = 0; i < n; i++) printf(i ? ",%.6f" : "%.6f", v[i]);
  printf("],");
}

static void print_result(double wall, double cpu_s) {
  printf("{\"offered\":%lld,\"seconds\":%.15g,\"wall\":%.6f,", total, opt.seconds, wall);
  if (last_ok < 0) printf("\"last_ok\":null,");
  else printf("\"last_ok\":%.6f,", last_ok - start);
  printf("\"statuses\":{");
  for (int s = 0, first = 1; s < 1000; s++)
    if (statuses[s]) { printf(first ? "\"%d\":%lld" : ",\"%d\":%lld", s, statuses[s]); first = 0; }
  printf("},");
  print_array("ok_latencies", ok_latencies, ok_count);
  print_array("ok_from_send", ok_from_send, ok_count);
  printf("\"timeouts\":%lld,\"errors\":%lld,\"late_sends\":%lld,\"connections_opened\":%lld,\"cpu_s\":%.6f}\n",
         timeouts, errors, late_sends, connections_opened, cpu_s);
}

int main(int argc, char **argv) {
  setup(argc, argv);
  static char out[1 << 20];
  setvbuf(stdout, out, _IOFBF, sizeof out);
  double cpu = clock_seconds(CLOCK_PROCESS_CPUTIME_ID);
  start = now();
  wall_start = clock_seconds(CLOCK_REALTIME);
  deadline = start + opt.seconds + opt.timeout;
  run();
  double wall = now() - start;
  print_result(wall, clock_seconds(CLOCK_PROCESS_CPUTIME_ID) - cpu);
  return fflush(stdout) ? 1 : 0;
}
