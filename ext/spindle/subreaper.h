/* Spindle::Cluster::Subreaper.set_child_subreaper (subreaper.c): prctl(2). */
#ifndef SPINDLE_SUBREAPER_H
#define SPINDLE_SUBREAPER_H

#include <ruby.h>

void sp_init_subreaper(VALUE mSpindle);

#endif
