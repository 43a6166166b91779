/* dlpack.c -- shared ownership of device memory between cute tensors and
 * DLPack tensors (include/cute_dlpack.h).  An owner is a reference count
 * plus what to do when it reaches zero: cuMemFree a cute allocation, or call
 * an imported DLPack tensor's deleter.  An export is one malloc'ed block:
 * the managed struct, then the owner pointer, then shape and strides. */
#include "cute_dlpack.h"
#include "cute_cuda.h"
#include "core.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

enum { OWN_DEVICE = 0, OWN_MANAGED = 1, OWN_VERSIONED = 2 };

struct cute_dl_owner {
  atomic_int refs;
  int kind;
  uint64_t dptr;   /* OWN_DEVICE */
  void *managed;   /* OWN_MANAGED / OWN_VERSIONED */
};

static atomic_int live_exports;

static cute_dl_owner *owner_new(int kind, uint64_t dptr, void *managed) {
  cute_dl_owner *o = malloc(sizeof *o);
  if (!o) return NULL;
  atomic_init(&o->refs, 1);
  o->kind = kind;
  o->dptr = dptr;
  o->managed = managed;
  return o;
}

cute_dl_owner *cute_dl_owner_device(uint64_t dptr) { return owner_new(OWN_DEVICE, dptr, NULL); }

cute_dl_owner *cute_dl_owner_managed(void *managed, int versioned) {
  return owner_new(versioned ? OWN_VERSIONED : OWN_MANAGED, 0, managed);
}

void cute_dl_owner_retain(cute_dl_owner *o) {
  if (o) atomic_fetch_add_explicit(&o->refs, 1, memory_order_relaxed);
}

int cute_dl_owner_refs(const cute_dl_owner *o) {
  return o ? atomic_load_explicit(&((cute_dl_owner *)o)->refs, memory_order_acquire) : 0;
}

void cute_dl_delete(void *managed, int versioned) {
  if (!managed) return;
  if (versioned) {
    DLManagedTensorVersioned *m = managed;
    if (m->deleter) m->deleter(m);
  } else {
    DLManagedTensor *m = managed;
    if (m->deleter) m->deleter(m);
  }
}

void cute_dl_owner_release(cute_dl_owner *o) {
  if (!o) return;
  if (atomic_fetch_sub_explicit(&o->refs, 1, memory_order_acq_rel) != 1) return;
  if (o->kind == OWN_DEVICE) {
    if (o->dptr) cute_cuda_free(o->dptr, NULL);  /* nothing to report to: the holder is gone */
  } else {
    cute_dl_delete(o->managed, o->kind == OWN_VERSIONED);
  }
  free(o);
}

/* ---- exports ------------------------------------------------------------- */
typedef struct export_block {
  union {
    DLManagedTensor legacy;
    DLManagedTensorVersioned versioned;
  } m;
  cute_dl_owner *owner;
  int64_t dims[];   /* shape[ndim], then strides[ndim] */
} export_block;

static void export_free(export_block *b) {
  cute_dl_owner_release(b->owner);
  free(b);
  atomic_fetch_sub_explicit(&live_exports, 1, memory_order_relaxed);
}

/* the deleters: the block starts with the managed struct */
static void delete_legacy(DLManagedTensor *self) {
  if (self) export_free((export_block *)self);
}
static void delete_versioned(DLManagedTensorVersioned *self) {
  if (self) export_free((export_block *)self);
}

void *cute_dl_export(const void *view, cute_dl_owner *owner, int versioned, uint64_t flags,
                     cute_err *err) {
  const DLTensor *t = view;
  if (!t) {
    cute_err_setf(err, CUTE_E_ARG, "cute_dl_export: the DLTensor is NULL");
    return NULL;
  }
  if (t->ndim < 0 || t->ndim > 64) {
    cute_err_setf(err, CUTE_E_ARG, "cute_dl_export: ndim %d is not in 0..64", (int)t->ndim);
    return NULL;
  }
  int nd = t->ndim;
  if (nd > 0 && !t->shape) {
    cute_err_setf(err, CUTE_E_ARG, "cute_dl_export: ndim is %d but shape is NULL", nd);
    return NULL;
  }
  for (int i = 0; i < nd; i++) {
    if (t->shape[i] < 0) {
      cute_err_setf(err, CUTE_E_ARG, "cute_dl_export: shape[%d] = %lld is negative", i,
                    (long long)t->shape[i]);
      return NULL;
    }
  }
  export_block *b = calloc(1, sizeof *b + 2 * (size_t)nd * sizeof(int64_t));
  if (!b) {
    cute_err_setf(err, CUTE_E_NOMEM, "cute_dl_export: out of memory");
    return NULL;
  }
  int64_t *shape = b->dims, *strides = b->dims + nd;
  int64_t s = 1;
  for (int i = nd - 1; i >= 0; i--) {
    shape[i] = t->shape[i];
    strides[i] = t->strides ? t->strides[i] : s;
    s *= t->shape[i] > 0 ? t->shape[i] : 1;
  }
  DLTensor *d = versioned ? &b->m.versioned.dl_tensor : &b->m.legacy.dl_tensor;
  *d = *t;
  d->shape = nd ? shape : NULL;
  d->strides = nd ? strides : NULL;
  if (versioned) {
    b->m.versioned.version.major = 1;
    b->m.versioned.version.minor = 1;
    b->m.versioned.manager_ctx = b;
    b->m.versioned.deleter = delete_versioned;
    b->m.versioned.flags = flags;
  } else {
    b->m.legacy.manager_ctx = b;
    b->m.legacy.deleter = delete_legacy;
  }
  b->owner = owner;
  cute_dl_owner_retain(owner);
  atomic_fetch_add_explicit(&live_exports, 1, memory_order_relaxed);
  return b;
}

int cute_dl_live_exports(void) { return atomic_load_explicit(&live_exports, memory_order_relaxed); }
