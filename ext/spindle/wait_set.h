/* Spindle::WaitSet (wait_set.c): one epoll set a pool of threads waits on. */
#ifndef SPINDLE_WAIT_SET_H
#define SPINDLE_WAIT_SET_H

#include <ruby.h>

void sp_init_wait_set(VALUE mSpindle);

#endif
