/* Spindle::CpuAffinity (cpu_affinity.c): which CPUs a thread may run on. */
#ifndef SPINDLE_CPU_AFFINITY_H
#define SPINDLE_CPU_AFFINITY_H

#include <ruby.h>

void sp_init_cpu_affinity(VALUE mSpindle);

#endif
