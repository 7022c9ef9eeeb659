/*
 * Spindle's HTTP/1.1 request parser. See http_parser.h and docs/PARSER.md.
 *
 * The head is found in two passes. While bytes arrive, a scanner checks line
 * endings and sizes as it goes, so a bare CR or LF, or a line that is already
 * too long, fails at once rather than after the limit. It also finds the blank
 * line that ends the head. Only then does a second pass read the complete head,
 * which keeps the grammar code free of "what if the bytes stop here" states.
 * That pass runs on the caller's buffer when the head arrived whole, and on a
 * private copy when it arrived in pieces.
 *
 * The body is decoded by a byte-level state machine, so any split of the input
 * gives the same result.
 */
#include "http_parser.h"

#include <stdlib.h>
#include <string.h>

enum {
  ST_HEAD,
  ST_IDENTITY,
  ST_CHUNK_SIZE,
  ST_CHUNK_EXT,
  ST_CHUNK_SIZE_LF,
  ST_CHUNK_DATA,
  ST_CHUNK_DATA_CR,
  ST_CHUNK_DATA_LF,
  ST_TRAILER_LINE,  /* at the start of a trailer line */
  ST_TRAILER_NAME,
  ST_TRAILER_VALUE,
  ST_TRAILER_LF,    /* CR seen, LF must follow; ends a field line */
  ST_TRAILER_END_LF, /* CR seen on an empty line: LF ends the message */
  ST_DONE,
  ST_ERROR
};

#define MAX_CONTENT_LENGTH_DIGITS 18 /* < 2^63, so no overflow is possible */
#define MAX_CHUNK_SIZE_DIGITS 15     /* 60 bits */
#define MAX_METHOD_LEN 32

/* ------------------------------------------------------------------ tables */

/* RFC 9110 §5.6.2 tchar. */
static const unsigned char TCHAR[256] = {
  ['!'] = 1, ['#'] = 1, ['$'] = 1, ['%'] = 1, ['&'] = 1, ['\''] = 1, ['*'] = 1,
  ['+'] = 1, ['-'] = 1, ['.'] = 1, ['^'] = 1, ['_'] = 1, ['`'] = 1, ['|'] = 1,
  ['~'] = 1,
  ['0'] = 1, ['1'] = 1, ['2'] = 1, ['3'] = 1, ['4'] = 1, ['5'] = 1, ['6'] = 1,
  ['7'] = 1, ['8'] = 1, ['9'] = 1,
  ['A'] = 1, ['B'] = 1, ['C'] = 1, ['D'] = 1, ['E'] = 1, ['F'] = 1, ['G'] = 1,
  ['H'] = 1, ['I'] = 1, ['J'] = 1, ['K'] = 1, ['L'] = 1, ['M'] = 1, ['N'] = 1,
  ['O'] = 1, ['P'] = 1, ['Q'] = 1, ['R'] = 1, ['S'] = 1, ['T'] = 1, ['U'] = 1,
  ['V'] = 1, ['W'] = 1, ['X'] = 1, ['Y'] = 1, ['Z'] = 1,
  ['a'] = 1, ['b'] = 1, ['c'] = 1, ['d'] = 1, ['e'] = 1, ['f'] = 1, ['g'] = 1,
  ['h'] = 1, ['i'] = 1, ['j'] = 1, ['k'] = 1, ['l'] = 1, ['m'] = 1, ['n'] = 1,
  ['o'] = 1, ['p'] = 1, ['q'] = 1, ['r'] = 1, ['s'] = 1, ['t'] = 1, ['u'] = 1,
  ['v'] = 1, ['w'] = 1, ['x'] = 1, ['y'] = 1, ['z'] = 1,
};

static int is_tchar(unsigned char c) { return TCHAR[c]; }

int sp_is_token(const char *ptr, size_t len) {
  if (len == 0) return 0;
  for (size_t i = 0; i < len; i++)
    if (!is_tchar((unsigned char)ptr[i])) return 0;
  return 1;
}
static int is_digit(unsigned char c) { return c >= '0' && c <= '9'; }
static int is_ows(unsigned char c) { return c == ' ' || c == '\t'; }

/* field-vchar / SP / HTAB: RFC 9110 §5.5, obs-text included. */
static int is_value_char(unsigned char c) {
  return c == '\t' || (c >= 0x20 && c != 0x7f);
}

static int hex_value(unsigned char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* reg-name, IPv4 and port characters: unreserved, sub-delims, '%' and ':'. */
static int is_host_char(unsigned char c) {
  if (c >= 'a' && c <= 'z') return 1;
  if (c >= 'A' && c <= 'Z') return 1;
  if (is_digit(c)) return 1;
  return c != 0 && strchr("-._~!$&'()*+,;=%:", c) != NULL;
}

static int ieq(sp_slice s, const char *lit) {
  size_t n = strlen(lit);
  if (s.len != n) return 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char a = (unsigned char)s.ptr[i];
    if (a >= 'A' && a <= 'Z') a = (unsigned char)(a + 32);
    if (a != (unsigned char)lit[i]) return 0;
  }
  return 1;
}

static sp_slice slice(const char *ptr, size_t len) {
  sp_slice s = {ptr, len};
  return s;
}

static sp_slice trim_ows(sp_slice s) {
  while (s.len && is_ows((unsigned char)s.ptr[0])) { s.ptr++; s.len--; }
  while (s.len && is_ows((unsigned char)s.ptr[s.len - 1])) s.len--;
  return s;
}

/* --------------------------------------------------------------- lifecycle */

void sp_limits_default(sp_limits *l) {
  l->max_request_line = 8192;
  l->max_field_name = 256;
  l->max_field_value = 8192;
  l->max_head = 65536;
  l->max_fields = 100;
  l->max_chunk_ext = 1024;
  l->max_chunk_ext_total = 16384;
  l->max_trailer = 8192;
  l->max_body = 104857600;
}

static void reset_message(sp_parser *p) {
  p->state = ST_HEAD;
  p->status = SP_OK;
  p->error = NULL;
  p->head_len = 0;
  p->line_len = 0;
  p->line_colon = 0;
  p->line_value_len = 0;
  p->prev_cr = 0;
  p->request_line_seen = 0;
  p->chunked = 0;
  p->keep_alive = 0;
  p->expect_continue = 0;
  p->version_minor = 1;
  p->content_length = 0;
  p->remaining = 0;
  p->body_total = 0;
  p->chunk_digits = 0;
  p->chunk_size = 0;
  p->chunk_ext_len = 0;
  p->chunk_ext_total = 0;
  p->ext_state = 0;
  p->quote_escape = 0;
  p->trailer_len = 0;
  p->trailer_fields = 0;
}

void sp_parser_init(sp_parser *p, const sp_limits *limits) {
  memset(p, 0, sizeof(*p));
  p->limits = *limits;
  reset_message(p);
}

void sp_parser_reset(sp_parser *p) {
  /* A buffer grown for one huge head is not kept for the life of the connection. */
  if (p->head_cap > 4096) {
    free(p->head);
    p->head = NULL;
    p->head_cap = 0;
  }
  reset_message(p);
}

void sp_parser_free(sp_parser *p) {
  free(p->head);
  p->head = NULL;
  p->head_cap = 0;
}

enum sp_phase sp_phase(const sp_parser *p) {
  switch (p->state) {
  case ST_HEAD: return SP_PHASE_HEAD;
  case ST_DONE: return SP_PHASE_DONE;
  case ST_ERROR: return SP_PHASE_ERROR;
  default: return SP_PHASE_BODY;
  }
}

static int fail(sp_parser *p, int status, const char *why) {
  p->state = ST_ERROR;
  p->status = status;
  p->error = why;
  return status;
}

/* ------------------------------------------------------- head: the scanner */

/* Field-line limits, checked as bytes arrive so an endless name or value fails
 * at its limit, not at the head limit. The value is counted from its first
 * non-blank byte, trailing blanks included, so this is a little stricter than
 * the check after trimming; since the scanner sees every byte however the input
 * is split, the verdict is the same for any split. */
static int scan_field_byte(sp_parser *p, unsigned char c) {
  const sp_limits *l = &p->limits;
  if (!p->line_colon) {
    if (c == ':') { p->line_colon = 1; return SP_OK; }
    if (p->line_len > l->max_field_name)
      return fail(p, SP_FIELDS_TOO_LARGE, "header field name too long");
    return SP_OK;
  }
  if (p->line_value_len == 0 && is_ows(c)) return SP_OK;
  if (++p->line_value_len > l->max_field_value)
    return fail(p, SP_FIELDS_TOO_LARGE, "header field value too long");
  return SP_OK;
}

/* Scans new head bytes. Returns the number of bytes up to and including the LF
 * that ends the head, 0 when the head is not complete yet, or fails the parser. */
static size_t scan_head(sp_parser *p, const char *data, size_t len) {
  const sp_limits *l = &p->limits;
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)data[i];
    /* Every byte counts, line ends included: endless empty lines must not buffer. */
    if (p->head_len + i + 1 > l->max_head) {
      fail(p, SP_FIELDS_TOO_LARGE, "request head too large");
      return 0;
    }
    if (p->prev_cr) {
      if (c != '\n') { fail(p, SP_BAD_REQUEST, "bare CR in head"); return 0; }
      p->prev_cr = 0;
      if (p->line_len == 0 && p->request_line_seen) return i + 1;
      if (p->line_len > 0) p->request_line_seen = 1;
      p->line_len = 0;
      p->line_colon = 0;
      p->line_value_len = 0;
      continue;
    }
    if (c == '\r') { p->prev_cr = 1; continue; }
    if (c == '\n') { fail(p, SP_BAD_REQUEST, "bare LF in head"); return 0; }
    p->line_len++;
    if (!p->request_line_seen) {
      /* Refuse at once what can never start a request (TLS on a plain port,
       * anything but a token character where the method starts) instead of
       * waiting for a line end that may not come. */
      if (c < 0x20 || c >= 0x7f || (p->line_len == 1 && !is_tchar(c))) {
        fail(p, SP_BAD_REQUEST, "invalid byte in request line");
        return 0;
      }
      if (p->line_len > l->max_request_line) {
        fail(p, SP_URI_TOO_LONG, "request line too long");
        return 0;
      }
    } else if (scan_field_byte(p, c)) {
      return 0;
    }
  }
  return 0;
}

static int append_head(sp_parser *p, const char *data, size_t len) {
  if (p->head_len + len > p->head_cap) {
    size_t cap = p->head_cap ? p->head_cap : 1024;
    while (cap < p->head_len + len) cap *= 2;
    char *grown = realloc(p->head, cap);
    if (!grown) return fail(p, SP_FIELDS_TOO_LARGE, "out of memory for head");
    p->head = grown;
    p->head_cap = cap;
  }
  memcpy(p->head + p->head_len, data, len);
  p->head_len += len;
  return SP_OK;
}

/* ---------------------------------------------- head: the grammar, pass two */

typedef struct field_state {
  size_t count;
  int has_host, has_length, has_te;
  int te_elements, te_chunked_count, te_last_chunked, te_empty, te_bad;
  int conn_close, conn_keep_alive;
  int expect_continue, expect_other;
  sp_slice host;
  int64_t content_length;
} field_state;

/* Returns the index just past the CRLF of the line starting at `at`. The scanner
 * guarantees that every CR in the head is followed by LF. */
static size_t line_end(const char *buf, size_t at, size_t len) {
  const char *cr = memchr(buf + at, '\r', len - at);
  return (size_t)(cr - buf);
}

static int parse_version(sp_parser *p, sp_slice v) {
  const char *s = v.ptr;
  if (v.len != 8 || memcmp(s, "HTTP/", 5) != 0 || !is_digit((unsigned char)s[5]) ||
      s[6] != '.' || !is_digit((unsigned char)s[7]))
    return fail(p, SP_BAD_REQUEST, "malformed HTTP version");
  if (s[5] != '1' || (s[7] != '0' && s[7] != '1'))
    return fail(p, SP_VERSION_NOT_SUPPORTED, "HTTP version not supported");
  p->version_minor = s[7] - '0';
  return SP_OK;
}

/* RFC 9110 §9.1: a method is any token, case-sensitive; which ones it serves is
 * the app's to say (405, 501). The method never frames a request here (only
 * Content-Length and Transfer-Encoding do), so an unusual one cannot smuggle.
 * CONNECT asks for a tunnel, which Spindle is not (501); "connect" is just
 * another token, and its authority-form target is refused like any other. */
static int parse_method(sp_parser *p, sp_slice m) {
  if (m.len == 0 || m.len > MAX_METHOD_LEN) return fail(p, SP_BAD_REQUEST, "bad method");
  for (size_t i = 0; i < m.len; i++)
    if (!is_tchar((unsigned char)m.ptr[i])) return fail(p, SP_BAD_REQUEST, "bad method");
  if (m.len == 7 && memcmp(m.ptr, "CONNECT", 7) == 0)
    return fail(p, SP_NOT_IMPLEMENTED, "CONNECT is not supported");
  return SP_OK;
}

static int valid_target_chars(sp_slice t) {
  for (size_t i = 0; i < t.len; i++) {
    unsigned char c = (unsigned char)t.ptr[i];
    if (c <= 0x20 || c >= 0x7f || c == '#') return 0;
  }
  return t.len > 0;
}

/* Splits an authority ("host", "host:port", "[v6]:port") and checks its
 * characters. An empty authority is valid (RFC 9112 §3.2). */
static int split_authority(sp_slice a, sp_slice *host, sp_slice *port) {
  size_t i = 0;
  *host = slice(a.ptr, 0);
  *port = slice(a.ptr, 0);
  if (a.len == 0) return 1;
  if (a.ptr[0] == '[') {
    const char *close = memchr(a.ptr, ']', a.len);
    if (!close) return 0;
    for (const char *c = a.ptr + 1; c < close; c++) {
      unsigned char ch = (unsigned char)*c;
      if (!(hex_value(ch) >= 0 || ch == ':' || ch == '.' || ch == '%' ||
            (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')))
        return 0;
    }
    i = (size_t)(close - a.ptr) + 1;
    *host = slice(a.ptr, i);
    if (i == a.len) return 1;
    if (a.ptr[i] != ':') return 0;
  } else {
    for (; i < a.len && a.ptr[i] != ':'; i++)
      if (!is_host_char((unsigned char)a.ptr[i])) return 0;
    *host = slice(a.ptr, i);
    if (i == a.len) return 1;
  }
  /* a.ptr[i] == ':' */
  sp_slice digits = slice(a.ptr + i + 1, a.len - i - 1);
  if (digits.len > 5) return 0;
  for (size_t k = 0; k < digits.len; k++)
    if (!is_digit((unsigned char)digits.ptr[k])) return 0;
  *port = digits;
  return host->len > 0;
}

static int parse_target(sp_parser *p, sp_slice m, sp_slice t, sp_head *h) {
  if (!valid_target_chars(t)) return fail(p, SP_BAD_REQUEST, "bad request target");
  sp_slice rest = t;
  if (t.ptr[0] == '*') {
    /* Methods are case-sensitive: "options" is not OPTIONS. */
    if (t.len != 1 || m.len != 7 || memcmp(m.ptr, "OPTIONS", 7) != 0)
      return fail(p, SP_BAD_REQUEST, "bad asterisk-form");
    h->path = t;
    h->query = slice(t.ptr, 0);
    return SP_OK;
  }
  if (t.ptr[0] != '/') {
    size_t scheme_len = ieq(slice(t.ptr, t.len < 7 ? t.len : 7), "http://") ? 7
                      : ieq(slice(t.ptr, t.len < 8 ? t.len : 8), "https://") ? 8 : 0;
    if (!scheme_len) return fail(p, SP_BAD_REQUEST, "bad request target");
    size_t a = scheme_len, e = a;
    while (e < t.len && t.ptr[e] != '/' && t.ptr[e] != '?') e++;
    sp_slice authority = slice(t.ptr + a, e - a);
    if (authority.len == 0 || !split_authority(authority, &h->host, &h->port))
      return fail(p, SP_BAD_REQUEST, "bad authority in request target");
    h->host_from_target = 1;
    h->https = scheme_len == 8;
    rest = slice(t.ptr + e, t.len - e);
  }
  const char *q = memchr(rest.ptr, '?', rest.len);
  size_t path_len = q ? (size_t)(q - rest.ptr) : rest.len;
  h->path = path_len ? slice(rest.ptr, path_len) : slice("/", 1);
  h->query = q ? slice(q + 1, rest.len - path_len - 1) : slice(rest.ptr, 0);
  return SP_OK;
}

static int parse_request_line(sp_parser *p, sp_slice line, sp_head *h) {
  const char *sp1 = memchr(line.ptr, ' ', line.len);
  if (!sp1) return fail(p, SP_BAD_REQUEST, "malformed request line");
  const char *after = sp1 + 1;
  const char *sp2 = memchr(after, ' ', (size_t)(line.ptr + line.len - after));
  if (!sp2) return fail(p, SP_BAD_REQUEST, "malformed request line");
  h->method = slice(line.ptr, (size_t)(sp1 - line.ptr));
  h->target = slice(after, (size_t)(sp2 - after));
  sp_slice version = slice(sp2 + 1, (size_t)(line.ptr + line.len - sp2 - 1));
  if (parse_method(p, h->method)) return p->status;
  if (parse_version(p, version)) return p->status;
  return parse_target(p, h->method, h->target, h);
}

/* Content-Length: 1*DIGIT, nothing else (no sign, no spaces inside, no list). */
static int parse_content_length(sp_parser *p, sp_slice v, field_state *f) {
  if (f->has_length) return fail(p, SP_BAD_REQUEST, "duplicate Content-Length");
  if (v.len == 0 || v.len > MAX_CONTENT_LENGTH_DIGITS)
    return fail(p, SP_BAD_REQUEST, "invalid Content-Length");
  int64_t n = 0;
  for (size_t i = 0; i < v.len; i++) {
    unsigned char c = (unsigned char)v.ptr[i];
    if (!is_digit(c)) return fail(p, SP_BAD_REQUEST, "invalid Content-Length");
    n = n * 10 + (c - '0');
  }
  f->has_length = 1;
  f->content_length = n;
  return SP_OK;
}

/* Walks a comma-separated list, calling fn on each OWS-trimmed element. Empty
 * elements (", chunked", "close,", "a,,b") are skipped: RFC 9110 §5.6.1.2 says a
 * recipient MUST parse and ignore them. How many there can be is bounded by
 * max_field_value. Returns the number of elements that were not empty. */
static size_t each_element(sp_slice v, void (*fn)(sp_slice, field_state *), field_state *f) {
  size_t start = 0, elements = 0;
  for (size_t i = 0; i <= v.len; i++) {
    if (i == v.len || v.ptr[i] == ',') {
      sp_slice e = trim_ows(slice(v.ptr + start, i - start));
      if (e.len) { fn(e, f); elements++; }
      start = i + 1;
    }
  }
  return elements;
}

static void te_element(sp_slice e, field_state *f) {
  for (size_t i = 0; i < e.len; i++)
    if (!is_tchar((unsigned char)e.ptr[i])) f->te_bad = 1; /* parameters too */
  f->te_elements++;
  f->te_last_chunked = ieq(e, "chunked");
  if (f->te_last_chunked) f->te_chunked_count++;
}

static void connection_element(sp_slice e, field_state *f) {
  if (ieq(e, "close")) f->conn_close = 1;
  else if (ieq(e, "keep-alive")) f->conn_keep_alive = 1;
}

/* RFC 9110 §10.1.1: 100-continue is the only expectation; any other is a 417. */
static void expect_element(sp_slice e, field_state *f) {
  if (ieq(e, "100-continue")) f->expect_continue = 1;
  else f->expect_other = 1;
}

static int framing_field(sp_parser *p, sp_slice name, sp_slice value, field_state *f) {
  if (ieq(name, "content-length")) return parse_content_length(p, value, f);
  if (ieq(name, "transfer-encoding")) {
    /* Field lines add up as one list; decide_framing judges the whole list. A
     * line that names no coding at all ("", ",") is refused rather than taken
     * as nothing: a hop that took the last line alone would see no
     * Transfer-Encoding where this one sees chunked. */
    f->has_te = 1;
    if (each_element(value, te_element, f) == 0) f->te_empty = 1;
    return SP_OK;
  }
  if (ieq(name, "host")) {
    if (f->has_host) return fail(p, SP_BAD_REQUEST, "duplicate Host");
    f->has_host = 1;
    f->host = value;
    return SP_OK;
  }
  if (ieq(name, "connection")) each_element(value, connection_element, f);
  else if (ieq(name, "expect")) each_element(value, expect_element, f);
  return SP_OK;
}

static int parse_field_line(sp_parser *p, sp_slice line, field_state *f,
                            const sp_callbacks *cb, void *cb_data) {
  const sp_limits *l = &p->limits;
  size_t i = 0;
  int underscore = 0;
  while (i < line.len && is_tchar((unsigned char)line.ptr[i])) {
    if (line.ptr[i] == '_') underscore = 1;
    i++;
  }
  if (i == 0) return fail(p, SP_BAD_REQUEST, "invalid header field name");
  if (i == line.len || line.ptr[i] != ':') return fail(p, SP_BAD_REQUEST, "invalid header field name");
  if (i > l->max_field_name) return fail(p, SP_FIELDS_TOO_LARGE, "header field name too long");
  sp_slice name = slice(line.ptr, i);
  sp_slice value = slice(line.ptr + i + 1, line.len - i - 1);
  for (size_t k = 0; k < value.len; k++)
    if (!is_value_char((unsigned char)value.ptr[k]))
      return fail(p, SP_BAD_REQUEST, "invalid character in header field value");
  value = trim_ows(value);
  if (value.len > l->max_field_value) return fail(p, SP_FIELDS_TOO_LARGE, "header field value too long");
  if (++f->count > l->max_fields) return fail(p, SP_FIELDS_TOO_LARGE, "too many header fields");
  /* Names with '_' collide with dashed names in the CGI env: never let one in. */
  if (underscore) return SP_OK;
  if (framing_field(p, name, value, f)) return p->status;
  if (cb->on_field(cb_data, name, value)) return fail(p, SP_BAD_REQUEST, "field rejected");
  return SP_OK;
}

/* Decides how the body is framed: RFC 9112 §6.1–6.3, without the lenient paths. */
static int decide_framing(sp_parser *p, field_state *f) {
  if (f->has_te) {
    if (f->has_length) return fail(p, SP_BAD_REQUEST, "Transfer-Encoding with Content-Length");
    if (p->version_minor == 0) return fail(p, SP_BAD_REQUEST, "Transfer-Encoding in HTTP/1.0");
    if (f->te_empty || f->te_bad) return fail(p, SP_BAD_REQUEST, "invalid Transfer-Encoding");
    if (f->te_chunked_count > 1 || (f->te_chunked_count == 1 && !f->te_last_chunked))
      return fail(p, SP_BAD_REQUEST, "chunked must be the single final coding");
    if (!f->te_last_chunked) return fail(p, SP_NOT_IMPLEMENTED, "unsupported transfer coding");
    if (f->te_elements > 1) return fail(p, SP_NOT_IMPLEMENTED, "unsupported transfer coding");
    p->chunked = 1;
    p->content_length = -1;
    p->state = ST_CHUNK_SIZE;
    return SP_OK;
  }
  p->content_length = f->has_length ? f->content_length : 0;
  if (p->limits.max_body && (uint64_t)p->content_length > p->limits.max_body)
    return fail(p, SP_PAYLOAD_TOO_LARGE, "request body too large");
  p->remaining = (uint64_t)p->content_length;
  p->state = p->remaining ? ST_IDENTITY : ST_DONE;
  return SP_OK;
}

static int finish_head(sp_parser *p, field_state *f, sp_head *h) {
  if (p->version_minor == 1 && !f->has_host) return fail(p, SP_BAD_REQUEST, "missing Host");
  if (f->has_host) {
    sp_slice host, port;
    if (!split_authority(f->host, &host, &port)) return fail(p, SP_BAD_REQUEST, "invalid Host");
    if (!h->host_from_target) { h->host = host; h->port = port; }
  }
  if (f->expect_other) return fail(p, SP_EXPECTATION_FAILED, "unsupported expectation");
  p->expect_continue = f->expect_continue && p->version_minor == 1;
  p->keep_alive = p->version_minor == 1 ? !f->conn_close : (f->conn_keep_alive && !f->conn_close);
  h->version_minor = p->version_minor;
  return decide_framing(p, f);
}

static int parse_head(sp_parser *p, const char *buf, size_t len,
                      const sp_callbacks *cb, void *cb_data) {
  size_t at = 0;
  while (at + 1 < len && buf[at] == '\r') at += 2; /* empty lines before the request */
  sp_head h;
  memset(&h, 0, sizeof(h));
  size_t end = line_end(buf, at, len);
  if (parse_request_line(p, slice(buf + at, end - at), &h)) return p->status;
  field_state f;
  memset(&f, 0, sizeof(f));
  at = end + 2;
  if (at < len && is_ows((unsigned char)buf[at]))
    return fail(p, SP_BAD_REQUEST, "whitespace before the first header field");
  while (at < len && buf[at] != '\r') {
    end = line_end(buf, at, len);
    if (is_ows((unsigned char)buf[at])) return fail(p, SP_BAD_REQUEST, "obsolete line folding");
    if (parse_field_line(p, slice(buf + at, end - at), &f, cb, cb_data)) return p->status;
    at = end + 2;
  }
  if (finish_head(p, &f, &h)) return p->status;
  if (cb->on_head_complete(cb_data, &h)) return fail(p, SP_BAD_REQUEST, "head rejected");
  return SP_OK;
}

static size_t execute_head(sp_parser *p, const char *data, size_t len,
                           const sp_callbacks *cb, void *cb_data) {
  size_t end = scan_head(p, data, len);
  if (p->state == ST_ERROR) return 0;
  if (!end) {
    if (append_head(p, data, len)) return 0;
    return len;
  }
  if (p->head_len == 0) {
    parse_head(p, data, end, cb, cb_data); /* the common case: the head came whole */
  } else {
    if (append_head(p, data, end)) return 0;
    parse_head(p, p->head, p->head_len, cb, cb_data);
  }
  return end;
}

/* -------------------------------------------------------------- the body */

static int body_bytes(sp_parser *p, const char *at, size_t n,
                      const sp_callbacks *cb, void *cb_data) {
  p->body_total += n;
  if (cb->on_body(cb_data, at, n)) return fail(p, SP_BAD_REQUEST, "body rejected");
  return SP_OK;
}

/* chunk-ext = *( BWS ";" BWS name [ BWS "=" BWS ( token / quoted-string ) ] ),
 * RFC 9112 §7.1.1. Checked byte by byte and bounded; its meaning is ignored, as
 * the RFC allows. */
enum { EXT_BEFORE_NAME, EXT_NAME, EXT_AFTER_NAME, EXT_BEFORE_VALUE, EXT_TOKEN,
       EXT_QUOTED, EXT_AFTER_VALUE, EXT_AFTER_SIZE };

static int ext_quoted_byte(sp_parser *p, unsigned char c) {
  if (!is_value_char(c)) return fail(p, SP_BAD_REQUEST, "invalid chunk extension");
  if (p->quote_escape) p->quote_escape = 0;
  else if (c == '\\') p->quote_escape = 1;
  else if (c == '"') p->ext_state = EXT_AFTER_VALUE;
  return SP_OK;
}

/* After a name or a value: blanks, then ';' (another extension), '=' (a value,
 * only after a name) or CR (end of the chunk line). */
static int ext_separator(sp_parser *p, unsigned char c, int after_name) {
  if (is_ows(c)) return SP_OK;
  if (c == ';') { p->ext_state = EXT_BEFORE_NAME; return SP_OK; }
  if (c == '=' && after_name) { p->ext_state = EXT_BEFORE_VALUE; return SP_OK; }
  if (c == '\r') { p->state = ST_CHUNK_SIZE_LF; return SP_OK; }
  return fail(p, SP_BAD_REQUEST, "invalid chunk extension");
}

static int chunk_ext_byte(sp_parser *p, unsigned char c) {
  if (++p->chunk_ext_len > p->limits.max_chunk_ext ||
      ++p->chunk_ext_total > p->limits.max_chunk_ext_total)
    return fail(p, SP_BAD_REQUEST, "chunk extension too long");
  switch (p->ext_state) {
  case EXT_BEFORE_NAME:
  case EXT_BEFORE_VALUE:
    if (is_ows(c)) return SP_OK;
    if (p->ext_state == EXT_BEFORE_VALUE && c == '"') { p->ext_state = EXT_QUOTED; return SP_OK; }
    if (!is_tchar(c)) return fail(p, SP_BAD_REQUEST, "invalid chunk extension");
    p->ext_state = p->ext_state == EXT_BEFORE_NAME ? EXT_NAME : EXT_TOKEN;
    return SP_OK;
  case EXT_NAME:
    if (is_tchar(c)) return SP_OK;
    p->ext_state = EXT_AFTER_NAME;
    return ext_separator(p, c, 1);
  case EXT_AFTER_NAME: return ext_separator(p, c, 1);
  case EXT_TOKEN:
    if (is_tchar(c)) return SP_OK;
    p->ext_state = EXT_AFTER_VALUE;
    return ext_separator(p, c, 0);
  case EXT_QUOTED: return ext_quoted_byte(p, c);
  case EXT_AFTER_SIZE: /* blanks after the size must lead to an extension */
    if (is_ows(c)) return SP_OK;
    if (c == ';') { p->ext_state = EXT_BEFORE_NAME; return SP_OK; }
    return fail(p, SP_BAD_REQUEST, "invalid chunk size");
  default: return ext_separator(p, c, 0); /* EXT_AFTER_VALUE */
  }
}

static int chunk_size_byte(sp_parser *p, unsigned char c) {
  int v = hex_value(c);
  if (v >= 0) {
    if (++p->chunk_digits > MAX_CHUNK_SIZE_DIGITS) return fail(p, SP_BAD_REQUEST, "chunk size too large");
    p->chunk_size = (p->chunk_size << 4) | (uint64_t)v;
    return SP_OK;
  }
  if (p->chunk_digits == 0) return fail(p, SP_BAD_REQUEST, "invalid chunk size");
  if (c == '\r') { p->state = ST_CHUNK_SIZE_LF; return SP_OK; }
  if (c == ';' || is_ows(c)) {
    /* Blanks after the size may only lead to an extension (BWS ";"). */
    p->chunk_ext_len = 0;
    p->ext_state = c == ';' ? EXT_BEFORE_NAME : EXT_AFTER_SIZE;
    p->state = ST_CHUNK_EXT;
    return c == ';' ? SP_OK : chunk_ext_byte(p, c);
  }
  return fail(p, SP_BAD_REQUEST, "invalid chunk size");
}

static int chunk_size_lf(sp_parser *p, unsigned char c) {
  if (c != '\n') return fail(p, SP_BAD_REQUEST, "chunk size line not ended by CRLF");
  if (p->chunk_size == 0) { p->state = ST_TRAILER_LINE; return SP_OK; }
  if (p->limits.max_body && p->body_total + p->chunk_size > p->limits.max_body)
    return fail(p, SP_PAYLOAD_TOO_LARGE, "request body too large");
  p->remaining = p->chunk_size;
  p->state = ST_CHUNK_DATA;
  return SP_OK;
}

/* Trailer fields: a tiny line machine that checks each byte and never keeps one. */
static int trailer_byte(sp_parser *p, unsigned char c) {
  if (++p->trailer_len > p->limits.max_trailer)
    return fail(p, SP_FIELDS_TOO_LARGE, "trailer section too large");
  switch (p->state) {
  case ST_TRAILER_LINE:
    if (c == '\r') { p->state = ST_TRAILER_END_LF; return SP_OK; }
    if (!is_tchar(c)) return fail(p, SP_BAD_REQUEST, "invalid trailer field");
    if (++p->trailer_fields > p->limits.max_fields)
      return fail(p, SP_FIELDS_TOO_LARGE, "too many trailer fields");
    p->state = ST_TRAILER_NAME;
    return SP_OK;
  case ST_TRAILER_NAME:
    if (c == ':') { p->state = ST_TRAILER_VALUE; return SP_OK; }
    return is_tchar(c) ? SP_OK : fail(p, SP_BAD_REQUEST, "invalid trailer field");
  case ST_TRAILER_VALUE:
    if (c == '\r') { p->state = ST_TRAILER_LF; return SP_OK; }
    return is_value_char(c) ? SP_OK : fail(p, SP_BAD_REQUEST, "invalid trailer field");
  case ST_TRAILER_LF:
    if (c != '\n') return fail(p, SP_BAD_REQUEST, "bare CR in trailer");
    p->state = ST_TRAILER_LINE;
    return SP_OK;
  default: /* ST_TRAILER_END_LF */
    if (c != '\n') return fail(p, SP_BAD_REQUEST, "bare CR in trailer");
    p->state = ST_DONE;
    return SP_OK;
  }
}

static int body_byte(sp_parser *p, unsigned char c) {
  switch (p->state) {
  case ST_CHUNK_SIZE: return chunk_size_byte(p, c);
  case ST_CHUNK_EXT: return chunk_ext_byte(p, c);
  case ST_CHUNK_SIZE_LF: return chunk_size_lf(p, c);
  case ST_CHUNK_DATA_CR:
    if (c != '\r') return fail(p, SP_BAD_REQUEST, "chunk data not followed by CRLF");
    p->state = ST_CHUNK_DATA_LF;
    return SP_OK;
  case ST_CHUNK_DATA_LF:
    if (c != '\n') return fail(p, SP_BAD_REQUEST, "chunk data not followed by CRLF");
    p->state = ST_CHUNK_SIZE;
    p->chunk_size = 0;
    p->chunk_digits = 0;
    return SP_OK;
  default:
    return trailer_byte(p, c);
  }
}

static size_t execute_body(sp_parser *p, const char *data, size_t len,
                           const sp_callbacks *cb, void *cb_data) {
  size_t i = 0;
  while (i < len && p->state != ST_DONE && p->state != ST_ERROR) {
    if (p->state == ST_IDENTITY || p->state == ST_CHUNK_DATA) {
      size_t n = len - i;
      if ((uint64_t)n > p->remaining) n = (size_t)p->remaining;
      if (body_bytes(p, data + i, n, cb, cb_data)) return i;
      i += n;
      p->remaining -= n;
      if (p->remaining == 0) p->state = p->state == ST_IDENTITY ? ST_DONE : ST_CHUNK_DATA_CR;
      continue;
    }
    if (body_byte(p, (unsigned char)data[i])) return i;
    i++;
  }
  return i;
}

/* ------------------------------------------------------------- execute */

size_t sp_execute(sp_parser *p, const char *data, size_t len,
                  const sp_callbacks *cb, void *cb_data) {
  if (p->state == ST_ERROR || p->state == ST_DONE) return 0;
  if (p->state == ST_HEAD) return execute_head(p, data, len, cb, cb_data);
  return execute_body(p, data, len, cb, cb_data);
}
