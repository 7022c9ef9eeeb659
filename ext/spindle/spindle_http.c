/*
 * Ruby binding of the request parser: Spindle::HTTP::Parser.
 *
 * The grammar lives in http_parser.c. This file turns its callbacks into the
 * Rack env: interned, frozen keys shared by every request, binary values, and
 * duplicate fields combined. It also maps a failure to the Ruby error class of
 * its status (the classes are defined in lib/spindle/http/parser.rb).
 */
#include <ruby.h>
#include <ruby/encoding.h>
#include <string.h>

#include "http_parser.h"
#include "cpu_affinity.h"
#include "shared_counts.h"
#include "wait_set.h"
#include "response_head.h"
#include "sendfile.h"
#include "subreaper.h"
#include "arrival_clock.h"

#define KEY_BUFFER 320

typedef struct {
  sp_parser parser;
  uint64_t known_seen; /* bit i: known_fields[i] is in this request's env */
  VALUE env;
  VALUE env_template; /* each request's env starts as a copy of it (nil: empty) */
  VALUE sink;         /* only during execute */
} parser_t;

static VALUE cParser, errors_by_status;
static VALUE k_request_method, k_request_uri, k_path_info, k_query_string,
  k_server_protocol, k_server_name, k_server_port, k_http_host, k_content_type,
  k_content_length, k_http_content_type, k_http_content_length, k_http_cookie,
  k_http_proxy, v_http_10, v_http_11, v_empty, v_default_port,
  v_https_port, v_get, v_head, v_post;
static ID id_head, id_body, id_done, id_error;

static void parser_mark(void *ptr) {
  parser_t *p = ptr;
  rb_gc_mark(p->env);
  rb_gc_mark(p->env_template);
  rb_gc_mark(p->sink);
}

static void parser_free(void *ptr) {
  parser_t *p = ptr;
  sp_parser_free(&p->parser);
  xfree(p);
}

static size_t parser_memsize(const void *ptr) {
  const parser_t *p = ptr;
  return sizeof(*p) + p->parser.head_cap;
}

static const rb_data_type_t parser_type = {
  "Spindle::HTTP::Parser",
  {parser_mark, parser_free, parser_memsize},
  0, 0, RUBY_TYPED_FREE_IMMEDIATELY,
};

static parser_t *get_parser(VALUE self) {
  parser_t *p;
  TypedData_Get_Struct(self, parser_t, &parser_type, p);
  return p;
}

static VALUE parser_alloc(VALUE klass) {
  parser_t *p;
  VALUE obj = TypedData_Make_Struct(klass, parser_t, &parser_type, p);
  sp_limits limits;
  sp_limits_default(&limits);
  sp_parser_init(&p->parser, &limits);
  p->env = Qnil;
  p->env_template = Qnil;
  p->sink = Qnil;
  return obj;
}

static VALUE interned(const char *ptr, size_t len) {
  return rb_enc_interned_str(ptr, (long)len, rb_utf8_encoding());
}

/* Values are binary, like every other value the parser produces. */
static VALUE interned_value(const char *ptr, size_t len) {
  return rb_enc_interned_str(ptr, (long)len, rb_ascii8bit_encoding());
}

static VALUE intern_lit(const char *lit) {
  VALUE s = interned(lit, strlen(lit));
  rb_gc_register_mark_object(s);
  return s;
}

static VALUE intern_value_lit(const char *lit) {
  VALUE s = interned_value(lit, strlen(lit));
  rb_gc_register_mark_object(s);
  return s;
}

/* The field names most requests carry (browsers, proxies, API clients), with
 * their env keys made once at load: such a name is matched here, without
 * building its key and looking it up in Ruby's table of interned strings. */
typedef struct {
  const char *name; /* lower case */
  size_t len;
  VALUE key;
} known_field;

static known_field known_fields[] = {
  {"host", 0, 0}, {"user-agent", 0, 0}, {"accept", 0, 0}, {"accept-encoding", 0, 0},
  {"accept-language", 0, 0}, {"connection", 0, 0}, {"content-type", 0, 0},
  {"content-length", 0, 0}, {"cookie", 0, 0}, {"referer", 0, 0}, {"cache-control", 0, 0},
  {"origin", 0, 0}, {"authorization", 0, 0}, {"if-none-match", 0, 0},
  {"if-modified-since", 0, 0}, {"upgrade-insecure-requests", 0, 0}, {"pragma", 0, 0},
  {"x-forwarded-for", 0, 0}, {"x-forwarded-proto", 0, 0}, {"x-forwarded-host", 0, 0},
  {"x-real-ip", 0, 0}, {"x-request-id", 0, 0}, {"x-requested-with", 0, 0},
  {"x-csrf-token", 0, 0}, {"sec-fetch-dest", 0, 0}, {"sec-fetch-mode", 0, 0},
  {"sec-fetch-site", 0, 0}, {"sec-fetch-user", 0, 0}, {"sec-ch-ua", 0, 0},
  {"sec-ch-ua-mobile", 0, 0}, {"sec-ch-ua-platform", 0, 0}, {"priority", 0, 0},
  {"dnt", 0, 0}, {"te", 0, 0}, {"range", 0, 0}, {"expect", 0, 0}, {"upgrade", 0, 0},
  {"transfer-encoding", 0, 0}, {"forwarded", 0, 0}, {"via", 0, 0},
};
#define KNOWN_FIELDS (sizeof(known_fields) / sizeof(known_fields[0]))
/* One bit each in parser_t's known_seen. */
typedef char known_fields_fit_a_mask[KNOWN_FIELDS <= 64 ? 1 : -1];

/* lower is a known name; ptr, a field name the parser has checked is a
 * token. Only letters are folded. */
static int same_name(const char *lower, const char *ptr, size_t len) {
  for (size_t i = 0; i < len; i++) {
    char c = ptr[i];
    if (c >= 'A' && c <= 'Z') c = (char)(c + 32);
    if (c != lower[i]) return 0;
  }
  return 1;
}

/* The index of name among known_fields, or -1. */
static int known_index(sp_slice name) {
  for (size_t i = 0; i < KNOWN_FIELDS; i++) {
    if (known_fields[i].len == name.len && same_name(known_fields[i].name, name.ptr, name.len))
      return (int)i;
  }
  return -1;
}

/* "User-Agent" -> "HTTP_USER_AGENT", interned so each name is one shared object.
 * Content-Type and Content-Length take their CGI names, without the prefix. */
static VALUE build_env_key(sp_slice name) {
  char stack[KEY_BUFFER];
  size_t len = name.len + 5;
  char *buf = len <= sizeof(stack) ? stack : xmalloc(len);
  memcpy(buf, "HTTP_", 5);
  for (size_t i = 0; i < name.len; i++) {
    char c = name.ptr[i];
    buf[i + 5] = c == '-' ? '_' : (c >= 'a' && c <= 'z') ? (char)(c - 32) : c;
  }
  VALUE key = interned(buf, len);
  if (buf != stack) xfree(buf);
  if (key == k_http_content_type) return k_content_type;
  if (key == k_http_content_length) return k_content_length;
  return key;
}

/* After the k_ keys: build_env_key maps two of these names to them. */
static void init_known_fields(void) {
  for (size_t i = 0; i < KNOWN_FIELDS; i++) {
    known_field *f = &known_fields[i];
    f->len = strlen(f->name);
    sp_slice name = {f->name, f->len};
    f->key = build_env_key(name);
    rb_gc_register_mark_object(f->key);
  }
}

/* The env is made at the request's first field (or its head's end), as a
 * copy of the template: rb_hash_dup, not Hash#dup, which dispatches
 * initialize_dup and initialize_copy once per request. */
static VALUE current_env(parser_t *p) {
  if (NIL_P(p->env)) {
    p->env = NIL_P(p->env_template) ? rb_hash_new() : rb_hash_dup(p->env_template);
    p->known_seen = 0;
  }
  return p->env;
}

/* Adds a field to the env, or, when the request sent that name before, its
 * value to the earlier one's. A known name's first time needs no lookup: its
 * key is in no template (they hold no HTTP_ or CONTENT_ keys). */
static void add_field(parser_t *p, VALUE env, VALUE key, int known, sp_slice value) {
  VALUE prev = Qundef;
  if (known < 0 || (p->known_seen & (1ULL << known)))
    prev = rb_hash_lookup2(env, key, Qundef);
  if (prev == Qundef) {
    if (known >= 0) p->known_seen |= 1ULL << known;
    rb_hash_aset(env, key, rb_str_new(value.ptr, (long)value.len));
  } else {
    rb_str_cat_cstr(prev, key == k_http_cookie ? "; " : ", ");
    rb_str_cat(prev, value.ptr, (long)value.len);
  }
}

static int on_field(void *data, sp_slice name, sp_slice value) {
  parser_t *p = data;
  int known = known_index(name);
  VALUE key = known >= 0 ? known_fields[known].key : build_env_key(name);
  /* "Proxy" becomes HTTP_PROXY, which CGI-style code takes for a proxy setting
   * (httpoxy). No legitimate request needs it. */
  if (key == k_http_proxy) return 0;
  add_field(p, current_env(p), key, known, value);
  return 0;
}

static VALUE slice_str(sp_slice s) { return rb_str_new(s.ptr, (long)s.len); }

/* The method's interned value: GET, HEAD and POST from constants, any other
 * through Ruby's table of interned strings (rb_enc_interned_str hashes the
 * name and looks it up: 679 instructions of a hello request, by
 * bench/instructions from 649bc1b to 42206fd). */
static VALUE method_value(sp_slice m) {
  if (m.len == 3 && memcmp(m.ptr, "GET", 3) == 0) return v_get;
  if (m.len == 4 && memcmp(m.ptr, "POST", 4) == 0) return v_post;
  if (m.len == 4 && memcmp(m.ptr, "HEAD", 4) == 0) return v_head;
  return interned_value(m.ptr, m.len);
}

static int on_head_complete(void *data, const sp_head *h) {
  parser_t *p = data;
  VALUE env = current_env(p);
  rb_hash_aset(env, k_request_method, method_value(h->method));
  rb_hash_aset(env, k_request_uri, slice_str(h->target));
  rb_hash_aset(env, k_path_info, slice_str(h->path));
  rb_hash_aset(env, k_query_string, h->query.len ? slice_str(h->query) : v_empty);
  rb_hash_aset(env, k_server_protocol, h->version_minor ? v_http_11 : v_http_10);
  if (h->host.len) {
    rb_hash_aset(env, k_server_name, slice_str(h->host));
    /* A host without a port means the scheme's default, not the listener's. */
    rb_hash_aset(env, k_server_port, h->port.len ? slice_str(h->port) : h->https ? v_https_port : v_default_port);
  }
  if (h->host_from_target) {
    /* RFC 9112 §3.2.2: with an absolute-form target, its authority is the host. */
    const char *end = h->port.len ? h->port.ptr + h->port.len : h->host.ptr + h->host.len;
    rb_hash_aset(env, k_http_host, rb_str_new(h->host.ptr, end - h->host.ptr));
  }
  return 0;
}

static int on_body(void *data, const char *at, size_t len) {
  parser_t *p = data;
  if (NIL_P(p->sink)) return 1;
  rb_str_cat(p->sink, at, (long)len);
  return 0;
}

static const sp_callbacks callbacks = {on_field, on_head_complete, on_body};

static void raise_failure(parser_t *p) {
  VALUE klass = rb_hash_aref(errors_by_status, INT2FIX(p->parser.status));
  if (NIL_P(klass)) klass = rb_eRuntimeError;
  rb_raise(klass, "%s", p->parser.error ? p->parser.error : "bad request");
}

/* execute(data, offset, body) -> offset after the bytes consumed. */
static VALUE parser_execute(VALUE self, VALUE data, VALUE offset, VALUE sink) {
  parser_t *p = get_parser(self);
  StringValue(data);
  long off = NUM2LONG(offset), len = RSTRING_LEN(data);
  if (off < 0 || off > len) rb_raise(rb_eArgError, "offset %ld outside 0..%ld", off, len);
  if (!NIL_P(sink)) {
    StringValue(sink);
    rb_str_modify(sink);
  }
  if (sp_phase(&p->parser) == SP_PHASE_ERROR) raise_failure(p);
  p->sink = sink;
  size_t n = sp_execute(&p->parser, RSTRING_PTR(data) + off, (size_t)(len - off), &callbacks, p);
  p->sink = Qnil;
  RB_GC_GUARD(data);
  if (sp_phase(&p->parser) == SP_PHASE_ERROR) {
    if (p->parser.error && strcmp(p->parser.error, "body rejected") == 0 && NIL_P(sink))
      rb_raise(rb_eArgError, "request has a body but no body buffer was given");
    raise_failure(p);
  }
  return LONG2NUM(off + (long)n);
}

static VALUE parser_reset(VALUE self) {
  parser_t *p = get_parser(self);
  sp_parser_reset(&p->parser);
  p->env = Qnil;
  return self;
}

static VALUE parser_state(VALUE self) {
  switch (sp_phase(&get_parser(self)->parser)) {
  case SP_PHASE_HEAD: return ID2SYM(id_head);
  case SP_PHASE_BODY: return ID2SYM(id_body);
  case SP_PHASE_DONE: return ID2SYM(id_done);
  default: return ID2SYM(id_error);
  }
}

static VALUE parser_head_complete_p(VALUE self) {
  enum sp_phase ph = sp_phase(&get_parser(self)->parser);
  return (ph == SP_PHASE_BODY || ph == SP_PHASE_DONE) ? Qtrue : Qfalse;
}

static VALUE parser_done_p(VALUE self) {
  return sp_phase(&get_parser(self)->parser) == SP_PHASE_DONE ? Qtrue : Qfalse;
}

static VALUE parser_env(VALUE self) { return get_parser(self)->env; }

static VALUE parser_set_env_template(VALUE self, VALUE template) {
  parser_t *p = get_parser(self);
  if (!NIL_P(template)) Check_Type(template, T_HASH);
  p->env_template = template;
  return template;
}

static VALUE parser_content_length(VALUE self) {
  parser_t *p = get_parser(self);
  if (p->parser.chunked) return Qnil;
  return LL2NUM(p->parser.content_length);
}

static VALUE parser_chunked_p(VALUE self) { return get_parser(self)->parser.chunked ? Qtrue : Qfalse; }
static VALUE parser_keep_alive_p(VALUE self) { return get_parser(self)->parser.keep_alive ? Qtrue : Qfalse; }
static VALUE parser_expect_continue_p(VALUE self) {
  return get_parser(self)->parser.expect_continue ? Qtrue : Qfalse;
}
static VALUE parser_body_size(VALUE self) { return ULL2NUM(get_parser(self)->parser.body_total); }

/* Parser.sized_hash(n): an empty Hash with room for n entries (at least). Each
 * request's env is a copy of its connection's template (rb_hash_dup keeps
 * the template's room), so a template made with room for a request's fields
 * is never grown, and its entries rehashed, once per request. */
#if defined(HAVE_RB_HASH_NEW_CAPA)
#define sized_hash_new(n) rb_hash_new_capa(n)
#elif defined(HAVE_RB_HASH_NEW_WITH_SIZE)
VALUE rb_hash_new_with_size(st_index_t size); /* 3.1 exports it without declaring it */
#define sized_hash_new(n) rb_hash_new_with_size((st_index_t)(n))
#else
#define sized_hash_new(n) ((void)(n), rb_hash_new()) /* no room made: the env grows as before */
#endif
static VALUE parser_s_sized_hash(VALUE klass, VALUE n) {
  long size = NUM2LONG(n);
  if (size < 0) rb_raise(rb_eArgError, "negative size %ld", size);
  /* Ruby's table takes the next power of two above what it is asked for
   * (32 made room for 64, 1.7 KB a connection): asked for one less, it
   * makes room for exactly a power of two. */
  return sized_hash_new(size > 0 ? size - 1 : 0);
}

/* Limits arrive as a Hash from Ruby (Parser.new builds it from keywords). */
static size_t limit_value(VALUE limits, const char *name, size_t fallback) {
  VALUE v = rb_hash_lookup2(limits, ID2SYM(rb_intern(name)), Qundef);
  if (v == Qundef) return fallback;
  if (NIL_P(v)) return 0;
  long n = NUM2LONG(v);
  if (n <= 0) rb_raise(rb_eArgError, "limit %s must be positive", name);
  return (size_t)n;
}

static VALUE parser_configure(VALUE self, VALUE limits) {
  parser_t *p = get_parser(self);
  Check_Type(limits, T_HASH);
  sp_limits l;
  sp_limits_default(&l);
  l.max_request_line = limit_value(limits, "max_request_line", l.max_request_line);
  l.max_field_name = limit_value(limits, "max_field_name", l.max_field_name);
  l.max_field_value = limit_value(limits, "max_field_value", l.max_field_value);
  l.max_head = limit_value(limits, "max_head", l.max_head);
  l.max_fields = limit_value(limits, "max_fields", l.max_fields);
  l.max_chunk_ext = limit_value(limits, "max_chunk_ext", l.max_chunk_ext);
  l.max_chunk_ext_total = limit_value(limits, "max_chunk_ext_total", l.max_chunk_ext_total);
  l.max_trailer = limit_value(limits, "max_trailer", l.max_trailer);
  l.max_body = limit_value(limits, "max_body", (size_t)l.max_body);
  if (!l.max_request_line || !l.max_field_name || !l.max_field_value || !l.max_head ||
      !l.max_fields || !l.max_chunk_ext || !l.max_chunk_ext_total || !l.max_trailer)
    rb_raise(rb_eArgError, "only max_body may be nil");
  p->parser.limits = l;
  return self;
}

void Init_spindle_http(void) {
  VALUE mSpindle = rb_define_module("Spindle");
  VALUE mHTTP = rb_define_module_under(mSpindle, "HTTP");
  cParser = rb_define_class_under(mHTTP, "Parser", rb_cObject);
  errors_by_status = rb_const_get(mHTTP, rb_intern("ERRORS_BY_STATUS"));
  rb_gc_register_mark_object(errors_by_status);

  k_request_method = intern_lit("REQUEST_METHOD");
  k_request_uri = intern_lit("REQUEST_URI");
  k_path_info = intern_lit("PATH_INFO");
  k_query_string = intern_lit("QUERY_STRING");
  k_server_protocol = intern_lit("SERVER_PROTOCOL");
  k_server_name = intern_lit("SERVER_NAME");
  k_server_port = intern_lit("SERVER_PORT");
  k_http_host = intern_lit("HTTP_HOST");
  k_content_type = intern_lit("CONTENT_TYPE");
  k_content_length = intern_lit("CONTENT_LENGTH");
  k_http_content_type = intern_lit("HTTP_CONTENT_TYPE");
  k_http_content_length = intern_lit("HTTP_CONTENT_LENGTH");
  k_http_cookie = intern_lit("HTTP_COOKIE");
  k_http_proxy = intern_lit("HTTP_PROXY");
  v_http_10 = intern_value_lit("HTTP/1.0");
  v_http_11 = intern_value_lit("HTTP/1.1");
  v_empty = intern_value_lit("");
  v_default_port = intern_value_lit("80");
  v_https_port = intern_value_lit("443");
  v_get = intern_value_lit("GET");
  v_head = intern_value_lit("HEAD");
  v_post = intern_value_lit("POST");
  init_known_fields();
  id_head = rb_intern("head");
  id_body = rb_intern("body");
  id_done = rb_intern("done");
  id_error = rb_intern("error");

  rb_define_alloc_func(cParser, parser_alloc);
  rb_define_singleton_method(cParser, "sized_hash", parser_s_sized_hash, 1);
  rb_define_private_method(cParser, "configure", parser_configure, 1);
  rb_define_method(cParser, "execute", parser_execute, 3);
  rb_define_method(cParser, "reset", parser_reset, 0);
  rb_define_method(cParser, "state", parser_state, 0);
  rb_define_method(cParser, "head_complete?", parser_head_complete_p, 0);
  rb_define_method(cParser, "done?", parser_done_p, 0);
  rb_define_method(cParser, "env", parser_env, 0);
  rb_define_method(cParser, "env_template=", parser_set_env_template, 1);
  rb_define_method(cParser, "content_length", parser_content_length, 0);
  rb_define_method(cParser, "chunked?", parser_chunked_p, 0);
  rb_define_method(cParser, "keep_alive?", parser_keep_alive_p, 0);
  rb_define_method(cParser, "expect_continue?", parser_expect_continue_p, 0);
  rb_define_method(cParser, "body_size", parser_body_size, 0);

  sp_init_response_head(mHTTP);
  sp_init_cpu_affinity(mSpindle);
  sp_init_arrival_clock(mSpindle);
  sp_init_shared_counts(mSpindle);
  sp_init_wait_set(mSpindle);
  sp_init_sendfile(mHTTP);
  sp_init_subreaper(mSpindle);
}
