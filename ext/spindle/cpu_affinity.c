/*
 * Spindle::CpuAffinity.cpus(tid) and .set(tid, cpus): sched_getaffinity and
 * sched_setaffinity for one thread (tid 0: the calling thread), with the CPUs
 * as an Array of Integers. lib/spindle/ops/cpu_affinity.rb pins a whole process
 * with them. Where the calls do not exist, cpus is nil and set raises
 * NotImplementedError.
 */
/* First: ruby.h's config defines _GNU_SOURCE, which sched.h needs for
 * sched_setaffinity and CPU_SET. */
#include "cpu_affinity.h"

#include <sched.h>
#include <sys/types.h>

#ifdef CPU_SETSIZE
static VALUE cpus(VALUE self, VALUE tid) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity((pid_t)NUM2INT(tid), sizeof(set), &set) != 0) rb_sys_fail("sched_getaffinity");

  VALUE list = rb_ary_new();
  for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
    if (CPU_ISSET(cpu, &set)) rb_ary_push(list, INT2FIX(cpu));
  }
  return list;
}

static VALUE set(VALUE self, VALUE tid, VALUE list) {
  cpu_set_t set;
  CPU_ZERO(&set);
  Check_Type(list, T_ARRAY);
  if (RARRAY_LEN(list) == 0) rb_raise(rb_eArgError, "no CPUs given");
  for (long i = 0; i < RARRAY_LEN(list); i++) {
    int cpu = NUM2INT(rb_ary_entry(list, i));
    if (cpu < 0 || cpu >= CPU_SETSIZE) rb_raise(rb_eArgError, "no such CPU: %d", cpu);
    CPU_SET(cpu, &set);
  }
  if (sched_setaffinity((pid_t)NUM2INT(tid), sizeof(set), &set) != 0) rb_sys_fail("sched_setaffinity");
  return list;
}
#else
static VALUE cpus(VALUE self, VALUE tid) { return Qnil; }
static VALUE set(VALUE self, VALUE tid, VALUE list) { rb_notimplement(); }
#endif

void sp_init_cpu_affinity(VALUE mSpindle) {
  VALUE mCpuAffinity = rb_define_module_under(mSpindle, "CpuAffinity");
  rb_define_module_function(mCpuAffinity, "cpus", cpus, 1);
  rb_define_module_function(mCpuAffinity, "set", set, 2);
}
