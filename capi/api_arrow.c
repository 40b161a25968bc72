/*
 * api_arrow.c: the Arrow C Data Interface entry points.
 *
 * Go (arrow.go) reads into C buffers (cmem.go: posix_memalign, freed with
 * free) and exports them with arrow-go's cdata package, whose release callback
 * is a Go function. Here, after a successful export, that struct is kept
 * in a C "guard" with a reference count, and the caller's struct becomes a
 * reference to it: same length, offset and buffers (the same pointers),
 * release = guarded_array_release, private_data = the guard.
 * colio_arrow_array_ref makes more references. Releasing a reference
 * never enters Go, except the last one, which calls cdata's release on the
 * kept struct: that frees the buffers (C's free) and the guard goes too.
 *
 * The release callbacks check the fork guard: in a child after fork() the
 * Go runtime cannot be entered, so a release there only marks the struct
 * released (the child leaks that memory until it exits) instead of
 * hanging in Go. The parent's references are unaffected.
 *
 * Schemas are static: the format is a string literal, the name "", no
 * metadata; release only marks the struct released. They cost nothing and
 * never enter Go.
 */
#include <stdlib.h>
#include <string.h>

#include "_cgo_export.h"
#include "colioi.h"

typedef struct {
  int64_t refs;           /* live references; atomic */
  struct ArrowArray base; /* cdata's export, released with the last one */
  const char *format;     /* the array's Arrow format (static) */
} array_guard;

static void guarded_array_release(struct ArrowArray *a) {
  if (a == NULL || a->release == NULL)
    return;
  array_guard *g = (array_guard *)a->private_data;
  a->release = NULL;
  a->private_data = NULL;
  if (colioi_forked)
    return;
  if (__atomic_sub_fetch(&g->refs, 1, __ATOMIC_ACQ_REL) == 0) {
    g->base.release(&g->base);
    free(g);
  }
}

static void static_schema_release(struct ArrowSchema *s) {
  if (s != NULL)
    s->release = NULL;
}

static void fill_schema(struct ArrowSchema *s, const char *format) {
  memset(s, 0, sizeof *s);
  s->format = format;
  s->name = "";
  s->release = static_schema_release;
}

/* Turns a fresh cdata export in *out into the first reference to it. If a
 * guard cannot be allocated, releases the export and fails. */
static int guard_export(const char *name, const char *format, struct ArrowArray *out,
                        struct ArrowSchema *out_schema) {
  array_guard *g = (array_guard *)malloc(sizeof *g);
  if (g == NULL) {
    out->release(out);
    memset(out, 0, sizeof *out);
    return colioi_fail(COLIO_ENOSPC, "%s: out of memory (%zu bytes for the array's guard)", name,
                       sizeof *g);
  }
  g->refs = 1;
  g->base = *out;
  g->format = format;
  out->release = guarded_array_release;
  out->private_data = g;
  if (out_schema)
    fill_schema(out_schema, format);
  return COLIO_OK;
}

/* The outputs are zeroed before Go writes them: Go stores pointers into
 * them, and its write barrier must not see stale values as pointers. A
 * zeroed struct also reads as released (release == NULL) on failure. */
static void clear_outputs(struct ArrowArray *out, struct ArrowSchema *out_schema) {
  memset(out, 0, sizeof *out);
  if (out_schema)
    memset(out_schema, 0, sizeof *out_schema);
}

int colio_read_ranges_arrow(colio_source *src, const colio_range *ranges, int64_t n,
                            struct ArrowArray *out, struct ArrowSchema *out_schema) {
  COLIOI_ENTER("colio_read_ranges_arrow");
  COLIOI_NEED("colio_read_ranges_arrow", out);
  clear_outputs(out, out_schema);
  int rc = colioGoReadRangesArrow((uintptr_t)src, (void *)ranges, n, out, colioi_tls_level);
  if (rc != COLIO_OK) {
    clear_outputs(out, out_schema);
    return rc;
  }
  return guard_export("colio_read_ranges_arrow", "Z", out, out_schema);
}

int colio_read_arrow_buffer(colio_source *src, int64_t offset, int64_t size,
                            struct ArrowArray *out, struct ArrowSchema *out_schema) {
  COLIOI_ENTER("colio_read_arrow_buffer");
  COLIOI_NEED("colio_read_arrow_buffer", out);
  clear_outputs(out, out_schema);
  int rc = colioGoReadArrowBuffer((uintptr_t)src, offset, size, out, colioi_tls_level);
  if (rc != COLIO_OK) {
    clear_outputs(out, out_schema);
    return rc;
  }
  return guard_export("colio_read_arrow_buffer", "C", out, out_schema);
}

int colio_arrow_array_ref(const struct ArrowArray *array, struct ArrowArray *out,
                          struct ArrowSchema *out_schema) {
  COLIOI_ENTER("colio_arrow_array_ref");
  COLIOI_NEED("colio_arrow_array_ref", out);
  if ((const struct ArrowArray *)out == array) /* the reference in it would be lost */
    return colioi_fail(COLIO_EINVAL, "colio_arrow_array_ref: out is array itself");
  clear_outputs(out, out_schema);
  COLIOI_NEED("colio_arrow_array_ref", array);
  struct ArrowArray a = *array;
  if (a.release != guarded_array_release)
    return colioi_fail(COLIO_EINVAL, "colio_arrow_array_ref: the array was %s",
                       a.release == NULL ? "released already" : "not exported by colio");
  array_guard *g = (array_guard *)a.private_data;
  __atomic_add_fetch(&g->refs, 1, __ATOMIC_RELAXED);
  *out = a;
  if (out_schema)
    fill_schema(out_schema, g->format);
  return COLIO_OK;
}
