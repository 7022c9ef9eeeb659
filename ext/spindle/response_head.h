/* Spindle::HTTP::ResponseHead (response_head.c): the common response in C. */
#ifndef SPINDLE_RESPONSE_HEAD_H
#define SPINDLE_RESPONSE_HEAD_H

#include <ruby.h>

void sp_init_response_head(VALUE mHTTP);

#endif
