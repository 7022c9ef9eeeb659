/*
 * Spindle::SharedCounts.new(size): size 64-bit integers, all 0, in an
 * anonymous shared mapping. A process forked after it was made reads and
 * writes the same integers as its parent and siblings (a cluster's workers
 * tell each other how many connections they hold: lib/spindle/engine/
 * sibling_share.rb). Every read and write is atomic; none takes a lock or
 * makes a system call, so a worker may ask before each accept.
 *
 *   counts[i]              # read
 *   counts[i] = v          # write
 *   counts.add(i, delta)   # add; returns the new value
 *   counts.swap(i, from, to)  # set to `to` only if it holds `from`; true if it did
 */
#include "shared_counts.h"

#include <stdint.h>
#include <sys/mman.h>

typedef struct {
  int64_t *slots;
  long size;
} counts_t;

static void counts_free(void *ptr) {
  counts_t *c = ptr;
  if (c->slots) munmap(c->slots, (size_t)c->size * sizeof(int64_t));
  xfree(c);
}

static size_t counts_memsize(const void *ptr) { return sizeof(counts_t); }

static const rb_data_type_t counts_type = {
    "Spindle::SharedCounts", {NULL, counts_free, counts_memsize}, NULL, NULL, RUBY_TYPED_FREE_IMMEDIATELY};

static VALUE counts_alloc(VALUE klass) {
  counts_t *c;
  VALUE self = TypedData_Make_Struct(klass, counts_t, &counts_type, c);
  c->slots = NULL;
  c->size = 0;
  return self;
}

static counts_t *get_counts(VALUE self) {
  counts_t *c;
  TypedData_Get_Struct(self, counts_t, &counts_type, c);
  if (!c->slots) rb_raise(rb_eRuntimeError, "SharedCounts not initialized");
  return c;
}

static int64_t *slot(VALUE self, VALUE index) {
  counts_t *c = get_counts(self);
  long i = NUM2LONG(index);
  if (i < 0 || i >= c->size) rb_raise(rb_eIndexError, "index %ld outside 0...%ld", i, c->size);
  return &c->slots[i];
}

static VALUE counts_initialize(VALUE self, VALUE size) {
  counts_t *c;
  TypedData_Get_Struct(self, counts_t, &counts_type, c);
  if (c->slots) rb_raise(rb_eRuntimeError, "SharedCounts already initialized");
  long n = NUM2LONG(size);
  if (n < 1 || n > 65536) rb_raise(rb_eArgError, "size must be 1..65536, not %ld", n);
  void *mem = mmap(NULL, (size_t)n * sizeof(int64_t), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) rb_sys_fail("mmap");
  c->slots = mem; /* anonymous mappings start zeroed */
  c->size = n;
  return self;
}

static VALUE counts_size(VALUE self) { return LONG2NUM(get_counts(self)->size); }

static VALUE counts_aref(VALUE self, VALUE index) {
  return LL2NUM(__atomic_load_n(slot(self, index), __ATOMIC_RELAXED));
}

static VALUE counts_aset(VALUE self, VALUE index, VALUE value) {
  __atomic_store_n(slot(self, index), (int64_t)NUM2LL(value), __ATOMIC_RELAXED);
  return value;
}

static VALUE counts_add(VALUE self, VALUE index, VALUE delta) {
  return LL2NUM(__atomic_add_fetch(slot(self, index), (int64_t)NUM2LL(delta), __ATOMIC_RELAXED));
}

static VALUE counts_swap(VALUE self, VALUE index, VALUE from, VALUE to) {
  int64_t expected = (int64_t)NUM2LL(from);
  int ok = __atomic_compare_exchange_n(slot(self, index), &expected, (int64_t)NUM2LL(to), 0, __ATOMIC_SEQ_CST,
                                       __ATOMIC_SEQ_CST);
  return ok ? Qtrue : Qfalse;
}

void sp_init_shared_counts(VALUE mSpindle) {
  VALUE cCounts = rb_define_class_under(mSpindle, "SharedCounts", rb_cObject);
  rb_define_alloc_func(cCounts, counts_alloc);
  rb_define_method(cCounts, "initialize", counts_initialize, 1);
  rb_define_method(cCounts, "size", counts_size, 0);
  rb_define_method(cCounts, "[]", counts_aref, 1);
  rb_define_method(cCounts, "[]=", counts_aset, 2);
  rb_define_method(cCounts, "add", counts_add, 2);
  rb_define_method(cCounts, "swap", counts_swap, 3);
}
