/* Spindle::ArrivalClock.first_byte_at (arrival_clock.c): when the kernel received a socket's first unread byte. */
#ifndef SPINDLE_ARRIVAL_CLOCK_H
#define SPINDLE_ARRIVAL_CLOCK_H

#include <ruby.h>

void sp_init_arrival_clock(VALUE mSpindle);

#endif
