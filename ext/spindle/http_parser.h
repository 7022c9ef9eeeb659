/*
 * Spindle's HTTP/1.1 request parser: the protocol, with no Ruby in it.
 *
 * The parser is fed bytes as they arrive and calls back for each header field,
 * once when the head is complete and for each run of decoded body bytes. It is
 * strict: where RFC 9112 lets a recipient either reject or repair a message, it
 * rejects, because a repair that another hop does differently is how request
 * smuggling happens. docs/PARSER.md is the contract.
 */
#ifndef SPINDLE_HTTP_PARSER_H
#define SPINDLE_HTTP_PARSER_H

#include <stddef.h>
#include <stdint.h>

/* Outcomes. SP_OK is 0; every other value is the HTTP status to answer with. */
enum sp_status {
  SP_OK = 0,
  SP_BAD_REQUEST = 400,
  SP_PAYLOAD_TOO_LARGE = 413,
  SP_URI_TOO_LONG = 414,
  SP_EXPECTATION_FAILED = 417,
  SP_FIELDS_TOO_LARGE = 431,
  SP_NOT_IMPLEMENTED = 501,
  SP_VERSION_NOT_SUPPORTED = 505
};

/* Public states, as Ruby sees them. */
enum sp_phase { SP_PHASE_HEAD, SP_PHASE_BODY, SP_PHASE_DONE, SP_PHASE_ERROR };

typedef struct sp_limits {
  size_t max_request_line;
  size_t max_field_name;
  size_t max_field_value;
  size_t max_head;
  size_t max_fields;
  size_t max_chunk_ext;
  size_t max_chunk_ext_total;
  size_t max_trailer;
  uint64_t max_body; /* 0 = no limit */
} sp_limits;

typedef struct sp_slice {
  const char *ptr;
  size_t len;
} sp_slice;

/* What the head said, handed to on_head_complete. Slices point into the head and
 * are valid only during the callback. */
typedef struct sp_head {
  sp_slice method;
  sp_slice target;    /* as received */
  sp_slice path;      /* origin-form path, "/" for an absolute-form target with none, "*" */
  sp_slice query;     /* without the '?'; len 0 when absent */
  sp_slice host;      /* from the target's authority, else the Host field; may be empty */
  sp_slice port;      /* digits after the host, len 0 when absent */
  int version_minor;  /* 0 or 1 */
  int host_from_target;
  int https;          /* the target was absolute-form with the https scheme */
} sp_head;

typedef struct sp_callbacks {
  /* A header field whose name may reach the app (names with '_' never do). */
  int (*on_field)(void *data, sp_slice name, sp_slice value);
  int (*on_head_complete)(void *data, const sp_head *head);
  int (*on_body)(void *data, const char *at, size_t len);
} sp_callbacks;

typedef struct sp_parser {
  sp_limits limits;
  int state;         /* internal state, see http_parser.c */
  int status;        /* sp_status of the failure, when state is the error state */
  const char *error; /* a short static reason for the failure */

  /* Head accumulation: bytes of an incomplete head are copied here. */
  char *head;
  size_t head_len, head_cap;
  size_t line_len;       /* bytes in the current, unterminated line */
  int prev_cr;           /* last byte seen was CR */
  int line_colon;        /* the current field line has had its colon */
  size_t line_value_len; /* value bytes so far on the current field line */
  int request_line_seen; /* a non-empty first line has ended */

  /* Framing, known once the head is complete. */
  int chunked;
  int keep_alive;
  int expect_continue;
  int version_minor;
  int64_t content_length; /* -1 when chunked */
  uint64_t remaining;     /* bytes left in the current identity body or chunk */
  uint64_t body_total;    /* decoded body bytes so far */

  /* Chunked decoding. */
  int chunk_digits;
  uint64_t chunk_size;
  size_t chunk_ext_len, chunk_ext_total;
  int ext_state, quote_escape;
  size_t trailer_len, trailer_fields;
} sp_parser;

void sp_limits_default(sp_limits *limits);
void sp_parser_init(sp_parser *parser, const sp_limits *limits);
void sp_parser_reset(sp_parser *parser);
void sp_parser_free(sp_parser *parser);

/* Consumes bytes from data; returns how many. Stops right after the head is
 * complete and right after the message is complete. On failure the parser's
 * phase becomes SP_PHASE_ERROR and status/error say why. A callback that returns
 * non-zero stops the parser with status 400 (the binding uses it when Ruby
 * raised). */
size_t sp_execute(sp_parser *parser, const char *data, size_t len,
                  const sp_callbacks *callbacks, void *cb_data);

enum sp_phase sp_phase(const sp_parser *parser);

/* Whether ptr[0, len) is an RFC 9110 token: one or more tchar. The response
 * writer checks an app's header names with it too. */
int sp_is_token(const char *ptr, size_t len);

#endif
