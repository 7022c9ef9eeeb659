/* Spindle::SharedCounts (shared_counts.c): integers every forked process sees. */
#ifndef SPINDLE_SHARED_COUNTS_H
#define SPINDLE_SHARED_COUNTS_H

#include <ruby.h>

void sp_init_shared_counts(VALUE mSpindle);

#endif
