/*
 * Spindle::HTTP::ResponseHead.render: the common response, written in one
 * pass in C. lib/spindle/http/response_writer.rb is the whole contract; this
 * is its fast path for what most responses are: a Hash of plain String
 * fields and an Array body of Strings small enough to go out in one write.
 *
 * It writes nothing it would have to judge. Anything the Ruby writer treats
 * specially (connection, transfer-encoding, rack.* fields, a name that is not
 * a token, a value with CR, LF or NUL, a value that is not a String, a
 * declared length the body does not match, a body part that is not a String,
 * a response over the coalescing limit) makes it give up: the head is left as
 * it was and it returns nil, and the Ruby writer does the response, reports
 * the problem and decides. So there is one set of rules; the test suite runs
 * both paths over the same responses and compares the bytes.
 */
#include <ruby.h>
#include <ruby/encoding.h>
#include <string.h>
#include <strings.h>

#include "http_parser.h"
#include "response_head.h"

/* The most one write carries; Ruby's ResponseWriter::COALESCE_LIMIT is this. */
#define COALESCE_LIMIT (64 * 1024)
/* ResponseWriter's DIGITS: a declared length has 1 to 18 digits. */
#define MAX_LENGTH_DIGITS 18

typedef struct {
  VALUE head;
  long declared; /* the app's content-length; -1: none */
  int has_date;
  int gave_up;
} render_t;

static int is_plain_value(VALUE value) {
  if (!RB_TYPE_P(value, T_STRING)) return 0;
  const char *ptr = RSTRING_PTR(value);
  long len = RSTRING_LEN(value);
  for (long i = 0; i < len; i++) {
    char c = ptr[i];
    if (c == '\r' || c == '\n' || c == '\0') return 0;
  }
  return 1;
}

static int named(const char *ptr, long len, const char *name) {
  return (long)strlen(name) == len && strncasecmp(ptr, name, (size_t)len) == 0;
}

/* Digits only, 1 to 18 of them: the length, else -1. */
static long declared_length(VALUE value) {
  if (!RB_TYPE_P(value, T_STRING)) return -1;
  const char *ptr = RSTRING_PTR(value);
  long len = RSTRING_LEN(value);
  if (len == 0 || len > MAX_LENGTH_DIGITS) return -1;
  long n = 0;
  for (long i = 0; i < len; i++) {
    if (ptr[i] < '0' || ptr[i] > '9') return -1;
    n = n * 10 + (ptr[i] - '0');
  }
  return n;
}

/* The fields the server acts on: 0 to write the field, -1 to give up. */
static int note_special(render_t *r, const char *name, long len, VALUE value) {
  if (len >= 5 && memcmp(name, "rack.", 5) == 0) return -1;
  switch (len) {
  case 4:
    if (named(name, len, "date")) r->has_date = 1;
    return 0;
  case 10:
    return named(name, len, "connection") ? -1 : 0;
  case 14:
    if (!named(name, len, "content-length")) return 0;
    if (r->declared >= 0) return -1;
    r->declared = declared_length(value);
    return r->declared >= 0 ? 0 : -1;
  case 17:
    return named(name, len, "transfer-encoding") ? -1 : 0;
  default:
    return 0;
  }
}

static void add_line(VALUE head, VALUE name, VALUE value) {
  rb_str_buf_cat(head, RSTRING_PTR(name), RSTRING_LEN(name));
  rb_str_buf_cat(head, ": ", 2);
  rb_str_buf_cat(head, RSTRING_PTR(value), RSTRING_LEN(value));
  rb_str_buf_cat(head, "\r\n", 2);
}

static int add_field(VALUE name, VALUE value, VALUE arg) {
  render_t *r = (render_t *)arg;
  if (!RB_TYPE_P(name, T_STRING)) goto give_up;
  const char *ptr = RSTRING_PTR(name);
  long len = RSTRING_LEN(name);
  if (!sp_is_token(ptr, (size_t)len) || note_special(r, ptr, len, value) < 0) goto give_up;

  if (RB_TYPE_P(value, T_ARRAY)) {
    long n = RARRAY_LEN(value);
    for (long i = 0; i < n; i++)
      if (!is_plain_value(RARRAY_AREF(value, i))) goto give_up;
    for (long i = 0; i < n; i++) add_line(r->head, name, RARRAY_AREF(value, i));
  } else {
    if (!is_plain_value(value)) goto give_up;
    add_line(r->head, name, value);
  }
  return ST_CONTINUE;

give_up:
  r->gave_up = 1;
  return ST_STOP;
}

/* The body's size, or -1 when a part is not a String. */
static long body_size(VALUE body) {
  long total = 0, n = RARRAY_LEN(body);
  for (long i = 0; i < n; i++) {
    VALUE part = RARRAY_AREF(body, i);
    if (!RB_TYPE_P(part, T_STRING)) return -1;
    total += RSTRING_LEN(part);
  }
  return total;
}

static void add_content_length(VALUE head, long length) {
  char digits[24];
  int n = snprintf(digits, sizeof(digits), "%ld", length);
  rb_str_buf_cat(head, "content-length: ", 16);
  rb_str_buf_cat(head, digits, n);
  rb_str_buf_cat(head, "\r\n", 2);
}

static void add_parts(VALUE head, VALUE body) {
  long n = RARRAY_LEN(body);
  for (long i = 0; i < n; i++) {
    VALUE part = RARRAY_AREF(body, i);
    rb_str_buf_cat(head, RSTRING_PTR(part), RSTRING_LEN(part));
  }
}

/*
 * head: the status line, which the response is appended to. date: the
 * server's date line (unless the app gave one). ending: the connection line,
 * if any, and the blank line. Returns the body's size, or nil with head as it
 * was when this response is the Ruby writer's to do.
 */
static VALUE render(VALUE self, VALUE head, VALUE headers, VALUE body, VALUE date, VALUE ending) {
  if (!RB_TYPE_P(headers, T_HASH) || !RB_TYPE_P(body, T_ARRAY)) return Qnil;
  Check_Type(head, T_STRING);
  Check_Type(date, T_STRING);
  Check_Type(ending, T_STRING);
  long size = body_size(body);
  if (size < 0 || size > COALESCE_LIMIT) return Qnil;

  long start = RSTRING_LEN(head);
  rb_str_modify_expand(head, size + 256);
  render_t r = {head, -1, 0, 0};
  rb_hash_foreach(headers, add_field, (VALUE)&r);
  if (r.gave_up || (r.declared >= 0 && r.declared != size)) goto give_up;

  if (!r.has_date) rb_str_buf_cat(head, RSTRING_PTR(date), RSTRING_LEN(date));
  if (r.declared < 0) add_content_length(head, size);
  rb_str_buf_cat(head, RSTRING_PTR(ending), RSTRING_LEN(ending));
  if (RSTRING_LEN(head) + size > COALESCE_LIMIT) goto give_up;
  add_parts(head, body);
  rb_enc_associate(head, rb_ascii8bit_encoding());
  return LONG2NUM(size);

give_up:
  rb_str_set_len(head, start);
  return Qnil;
}

void sp_init_response_head(VALUE mHTTP) {
  VALUE mResponseHead = rb_define_module_under(mHTTP, "ResponseHead");
  rb_define_const(mResponseHead, "COALESCE_LIMIT", INT2FIX(COALESCE_LIMIT));
  rb_define_module_function(mResponseHead, "render", render, 5);
}
