/*
 * Invariants of ext/spindle/http_parser.c, checked on one input. Built into a
 * libFuzzer target (bin/fuzz) and into a plain replay program
 * (test/unit/fuzz_regression_test.rb). docs/FUZZING.md describes both.
 *
 * An input is three control bytes, then the bytes sent on one connection:
 *   byte 0  bit 0: small limits (so every limit path is reachable); bit 1:
 *           no body limit (max_body = 0)
 *   byte 1-2 the split offset (little-endian, modulo the stream length + 1);
 *           byte 1 also picks the stride of the fixed-size feed
 * The stream is parsed as pipelined requests (reset after each complete one)
 * four ways: whole, split in two at the offset, one byte at a time and in
 * fixed-size pieces. Every piece is a fresh heap copy that is poisoned and
 * freed once sp_execute returns, as the contract allows, so a parser that
 * keeps a pointer into consumed bytes is caught by AddressSanitizer. Each
 * way records what the callbacks delivered in a log; the four logs must be
 * byte-identical. Any broken invariant aborts with a message.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_parser.h"

#define CHECK(cond, what)                                                     \
  do {                                                                        \
    if (!(cond)) {                                                            \
      fprintf(stderr, "spindle fuzz: invariant failed: %s (%s:%d)\n", what,  \
              __FILE__, __LINE__);                                            \
      abort();                                                                \
    }                                                                         \
  } while (0)

/* Parser bugs that are reported but not fixed yet (docs/FUZZING.md). bin/fuzz
 * builds with SP_FUZZ_ALLOW_KNOWN so that a long run looks for new ones;
 * `bin/fuzz --strict` and the regression test check them too. Wrap the
 * broken condition in KNOWN(...) next to its CHECK. None is open now. */
#ifdef SP_FUZZ_ALLOW_KNOWN
#define KNOWN(cond) (cond)
#else
#define KNOWN(cond) 0
#endif

/* ------------------------------------------------------------ the log */

typedef struct buf {
  unsigned char *ptr;
  size_t len, cap;
} buf;

static void put(buf *b, const void *p, size_t n) {
  if (b->len + n > b->cap) {
    size_t cap = b->cap ? b->cap * 2 : 256;
    while (cap < b->len + n) cap *= 2;
    b->ptr = realloc(b->ptr, cap);
    CHECK(b->ptr != NULL, "out of memory in the harness");
    b->cap = cap;
  }
  memcpy(b->ptr + b->len, p, n);
  b->len += n;
}

static void put_u64(buf *b, uint64_t v) { put(b, &v, sizeof v); }
static void put_tag(buf *b, char tag) { put(b, &tag, 1); }

/* Slices are copied into the log: they are valid only during the callback. */
static void put_slice(buf *b, sp_slice s) {
  put_u64(b, s.len);
  if (s.len) put(b, s.ptr, s.len);
}

/* ------------------------------------------------------------ one run */

typedef struct run {
  sp_parser parser;
  buf log;
  const char *piece; /* the piece sp_execute is working on, for bounds checks */
  size_t piece_len;
  size_t offset;     /* stream offset of the next byte to feed */
  size_t start;      /* stream offset where the current message began */
  uint64_t body;     /* body bytes delivered for the current message */
  size_t fields;     /* on_field calls for the current message */
  int head_done;
} run;

static int within(const run *r, sp_slice s) {
  const sp_parser *p = &r->parser;
  if (s.len == 0) return 1;
  if (s.ptr >= r->piece && s.ptr + s.len <= r->piece + r->piece_len) return 1;
  return p->head && s.ptr >= p->head && s.ptr + s.len <= p->head + p->head_len;
}

static int is_ows(char c) { return c == ' ' || c == '\t'; }

static int on_field(void *data, sp_slice name, sp_slice value) {
  run *r = data;
  const sp_limits *l = &r->parser.limits;
  CHECK(!r->head_done, "field after the head");
  CHECK(within(r, name) && within(r, value), "field slice outside the input and head buffer");
  CHECK(name.len > 0 && name.len <= l->max_field_name, "field name empty or over max_field_name");
  CHECK(value.len <= l->max_field_value, "field value over max_field_value");
  CHECK(memchr(name.ptr, '_', name.len) == NULL, "field name with '_' delivered");
  CHECK(memchr(name.ptr, ':', name.len) == NULL, "field name with ':' delivered");
  for (size_t i = 0; i < value.len; i++) {
    unsigned char c = (unsigned char)value.ptr[i];
    CHECK(c == '\t' || (c >= 0x20 && c != 0x7f), "control byte in a delivered value");
  }
  CHECK(value.len == 0 || (!is_ows(value.ptr[0]) && !is_ows(value.ptr[value.len - 1])),
        "field value not trimmed");
  CHECK(++r->fields <= l->max_fields, "more fields than max_fields");
  put_tag(&r->log, 'F');
  put_slice(&r->log, name);
  put_slice(&r->log, value);
  return 0;
}

static int on_head_complete(void *data, const sp_head *h) {
  run *r = data;
  const sp_limits *l = &r->parser.limits;
  CHECK(!r->head_done, "two heads in one message");
  r->head_done = 1;
  CHECK(h->method.len > 0 && h->target.len > 0, "empty method or target");
  CHECK(h->method.len + h->target.len + 10 <= l->max_request_line, "request line over limit");
  CHECK(within(r, h->method) && within(r, h->target) && within(r, h->query) &&
        within(r, h->host) && within(r, h->port), "head slice outside the input and head buffer");
  CHECK(within(r, h->path) || (h->path.len == 1 && h->path.ptr[0] == '/'), "path slice outside");
  /* RFC 9110 §9.1: a method is a token (tchar, §5.6.2) of at most 32 bytes. */
  CHECK(h->method.len <= 32, "method over 32 bytes");
  for (size_t i = 0; i < h->method.len; i++) {
    unsigned char c = (unsigned char)h->method.ptr[i];
    int token = (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
    CHECK(token, "method is not a token");
  }
  for (size_t i = 0; i < h->target.len; i++) {
    unsigned char c = (unsigned char)h->target.ptr[i];
    CHECK(c > 0x20 && c < 0x7f && c != '#', "target byte outside visible ASCII, or '#'");
  }
  CHECK(h->version_minor == 0 || h->version_minor == 1, "version other than 1.0/1.1");
  put_tag(&r->log, 'H');
  put_slice(&r->log, h->method);
  put_slice(&r->log, h->target);
  put_slice(&r->log, h->path);
  put_slice(&r->log, h->query);
  put_slice(&r->log, h->host);
  put_slice(&r->log, h->port);
  put_u64(&r->log, (uint64_t)h->version_minor << 2 | (uint64_t)h->host_from_target << 1 | (uint64_t)h->https);
  return 0;
}

static int on_body(void *data, const char *at, size_t len) {
  run *r = data;
  const sp_parser *p = &r->parser;
  CHECK(r->head_done, "body before the head");
  CHECK(len > 0, "empty body callback");
  CHECK(at >= r->piece && at + len <= r->piece + r->piece_len, "body slice outside the input");
  r->body += len;
  CHECK(!p->limits.max_body || r->body <= p->limits.max_body, "body over max_body");
  CHECK(p->chunked || r->body <= (uint64_t)p->content_length, "body over Content-Length");
  /* One record per byte, so that the log does not depend on how the body
   * was cut into callbacks. */
  for (size_t i = 0; i < len; i++) {
    put_tag(&r->log, 'b');
    put(&r->log, at + i, 1);
  }
  return 0;
}

static const sp_callbacks callbacks = {on_field, on_head_complete, on_body};

static void message_done(run *r) {
  const sp_parser *p = &r->parser;
  CHECK(r->head_done, "message done without a head");
  CHECK(r->body == p->body_total, "body_total differs from the bytes delivered");
  CHECK(p->chunked ? p->content_length == -1 : r->body == (uint64_t)p->content_length,
        "identity body shorter than Content-Length");
  put_tag(&r->log, 'E');
  put_u64(&r->log, r->offset);
  put_u64(&r->log, (uint64_t)p->content_length);
  put_u64(&r->log, (uint64_t)(p->chunked | p->keep_alive << 1 | p->expect_continue << 2));
  sp_parser_reset(&r->parser);
  r->start = r->offset;
  r->body = 0;
  r->fields = 0;
  r->head_done = 0;
}

/* Feeds one piece the way docs/PARSER.md tells a caller to: call sp_execute
 * until the piece is used up, resetting after every complete message. */
static int feed(run *r, const unsigned char *src, size_t len) {
  char *copy = malloc(len ? len : 1);
  CHECK(copy != NULL, "out of memory in the harness");
  memcpy(copy, src, len);
  r->piece = copy;
  r->piece_len = len;
  size_t at = 0;
  while (at < len && sp_phase(&r->parser) != SP_PHASE_ERROR) {
    sp_parser *p = &r->parser;
    enum sp_phase before = sp_phase(p);
    size_t n = sp_execute(p, copy + at, len - at, &callbacks, r);
    enum sp_phase after = sp_phase(p);
    CHECK(n <= len - at, "consumed more than it was given");
    CHECK(n > 0 || after == SP_PHASE_ERROR, "no progress without failing");
    CHECK(after != SP_PHASE_HEAD || n == len - at, "head incomplete but input left over");
    CHECK(after != SP_PHASE_BODY || before == SP_PHASE_HEAD || n == len - at,
          "body incomplete but input left over");
    CHECK(after != SP_PHASE_HEAD || p->head_len <= p->limits.max_head, "buffered head over max_head");
    CHECK(after == SP_PHASE_ERROR ||
          (p->chunk_ext_len <= p->limits.max_chunk_ext &&
           p->chunk_ext_total <= p->limits.max_chunk_ext_total &&
           p->trailer_len <= p->limits.max_trailer && p->trailer_fields <= p->limits.max_fields),
          "chunk extension or trailer over its limit");
    if (before == SP_PHASE_HEAD && after != SP_PHASE_HEAD && after != SP_PHASE_ERROR) {
      size_t head = r->offset + n - r->start; /* empty lines before it included */
      CHECK(head <= p->limits.max_head, "head over max_head accepted");
    }
    CHECK(after == SP_PHASE_ERROR ? p->status >= 400 && p->error != NULL : p->status == 0,
          "status does not match the phase");
    CHECK(after == SP_PHASE_ERROR || (after != SP_PHASE_HEAD) == r->head_done,
          "head callback and phase disagree");
    at += n;
    r->offset += n;
    if (after == SP_PHASE_DONE) message_done(r);
  }
  memset(copy, 0x7e, len);
  free(copy);
  r->piece = NULL;
  r->piece_len = 0;
  return sp_phase(&r->parser) == SP_PHASE_ERROR;
}

static void small_limits(sp_limits *l) {
  l->max_request_line = 48;
  l->max_field_name = 20; /* room for Transfer-Encoding */
  l->max_field_value = 24;
  l->max_head = 160;
  l->max_fields = 4;
  l->max_chunk_ext = 12;
  l->max_chunk_ext_total = 30;
  l->max_trailer = 24;
  l->max_body = 40;
}

/* Parses the stream cut at the given piece ends and returns the log. */
static buf parse(const sp_limits *limits, const unsigned char *s, size_t n,
                 const size_t *cuts, size_t ncuts) {
  run r;
  memset(&r, 0, sizeof r);
  sp_parser_init(&r.parser, limits);
  size_t from = 0;
  for (size_t i = 0; i <= ncuts; i++) {
    size_t to = i < ncuts ? cuts[i] : n;
    if (to > from && feed(&r, s + from, to - from)) break;
    if (to > from) from = to;
  }
  sp_parser *p = &r.parser;
  enum sp_phase ph = sp_phase(p);
  if (ph == SP_PHASE_ERROR) {
    int status = p->status;
    const char *why = p->error;
    CHECK(sp_execute(p, "G", 1, &callbacks, &r) == 0, "execute after failure consumed bytes");
    CHECK(sp_phase(p) == SP_PHASE_ERROR && p->status == status && p->error == why,
          "failure not sticky");
  } else {
    CHECK(r.offset == n, "stream not consumed without a failure");
  }
  put_tag(&r.log, 'Z');
  put_u64(&r.log, (uint64_t)ph);
  put_u64(&r.log, (uint64_t)p->status);
  if (p->error) put(&r.log, p->error, strlen(p->error));
  sp_parser_free(p);
  return r.log;
}

static void same(const buf *a, const buf *b, const char *how) {
  if (a->len == b->len && memcmp(a->ptr, b->ptr, a->len) == 0) return;
  fprintf(stderr, "spindle fuzz: fed %s, the parser said something else than fed whole\n", how);
  CHECK(0, "same result however the input is cut");
}

int sp_fuzz_one(const uint8_t *data, size_t size) {
  if (size < 3) return 0;
  sp_limits limits;
  sp_limits_default(&limits);
  if (data[0] & 1) small_limits(&limits);
  if (data[0] & 2) limits.max_body = 0;
  const unsigned char *s = data + 3;
  size_t n = size - 3;
  size_t split = ((size_t)data[1] | (size_t)data[2] << 8) % (n + 1);
  size_t stride = 2 + data[1] % 7;

  buf whole = parse(&limits, s, n, NULL, 0);
  buf two = parse(&limits, s, n, &split, 1);
  same(&whole, &two, "split in two");

  size_t *cuts = calloc(n + 1, sizeof *cuts);
  CHECK(cuts != NULL, "out of memory in the harness");
  for (size_t i = 0; i < n; i++) cuts[i] = i + 1;
  buf bytewise = parse(&limits, s, n, cuts, n);
  same(&whole, &bytewise, "one byte at a time");
  size_t k = 0;
  for (size_t at = stride; at < n; at += stride) cuts[k++] = at;
  buf strided = parse(&limits, s, n, cuts, k);
  same(&whole, &strided, "in fixed-size pieces");

  free(cuts);
  free(whole.ptr);
  free(two.ptr);
  free(bytewise.ptr);
  free(strided.ptr);
  return 0;
}

#ifndef SP_FUZZ_NO_MAIN
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return sp_fuzz_one(data, size); }
#endif
