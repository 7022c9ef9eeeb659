/*
 * Spindle::Cluster::Subreaper.set_child_subreaper: prctl(PR_SET_CHILD_SUBREAPER,
 * 1), so that this process's orphaned descendants (workers forked by the mold)
 * are reparented to it rather than to init. Returns true, or raises
 * SystemCallError with prctl's errno. lib/spindle/cluster/subreaper.rb calls
 * it; Fiddle, which called prctl before, warns on Ruby 3.4. Defined only
 * where the option exists (Linux kernels since 3.4).
 */
#include "subreaper.h"

#ifdef __linux__
#include <sys/prctl.h>
#endif

#ifdef PR_SET_CHILD_SUBREAPER
static VALUE set_child_subreaper(VALUE self) {
  if (prctl(PR_SET_CHILD_SUBREAPER, 1L, 0L, 0L, 0L) != 0) rb_sys_fail("prctl(PR_SET_CHILD_SUBREAPER)");
  return Qtrue;
}
#endif

void sp_init_subreaper(VALUE mSpindle) {
#ifdef PR_SET_CHILD_SUBREAPER
  VALUE mCluster = rb_define_module_under(mSpindle, "Cluster");
  VALUE mSubreaper = rb_define_module_under(mCluster, "Subreaper");
  rb_define_module_function(mSubreaper, "set_child_subreaper", set_child_subreaper, 0);
#endif
}
