/*
 * api_arrow.c: the Arrow C Data Interface entry points.
 *
 * Go (arrow.go) reads into buffers from arrow-go's mallocator (C memory)
 * and exports them with arrow-go's cdata package, whose release callbacks
 * are Go functions. Here, after a successful export, each release callback
 * is wrapped in a C one (a "guard") that checks the fork guard first: in a
 * child after fork() the Go runtime cannot be entered, so a release there
 * only marks the struct released (the child leaks that memory until it
 * exits) instead of hanging in Go. Outside a forked child the guard puts
 * cdata's callback and private data back into the (possibly moved) struct
 * and calls it, which frees everything and sets release to NULL.
 */
#include <stdlib.h>
#include <string.h>

#include "_cgo_export.h"
#include "colioi.h"

typedef struct {
  void (*release)(struct ArrowArray *);
  void *private_data;
} array_guard;

typedef struct {
  void (*release)(struct ArrowSchema *);
  void *private_data;
} schema_guard;

static void guarded_array_release(struct ArrowArray *a) {
  if (a == NULL || a->release == NULL)
    return;
  array_guard *g = (array_guard *)a->private_data;
  if (colioi_forked) {
    a->release = NULL;
    return;
  }
  a->private_data = g->private_data;
  a->release = g->release;
  free(g);
  a->release(a);
  a->release = NULL; /* cdata does this too; the spec requires it */
}

static void guarded_schema_release(struct ArrowSchema *s) {
  if (s == NULL || s->release == NULL)
    return;
  schema_guard *g = (schema_guard *)s->private_data;
  if (colioi_forked) {
    s->release = NULL;
    return;
  }
  s->private_data = g->private_data;
  s->release = g->release;
  free(g);
  s->release(s);
  s->release = NULL;
}

/* Wraps the release callbacks of a fresh export. If a guard cannot be
 * allocated, releases the export and fails. */
static int guard_export(const char *name, struct ArrowArray *out, struct ArrowSchema *out_schema) {
  array_guard *ga = (array_guard *)malloc(sizeof *ga);
  schema_guard *gs = out_schema ? (schema_guard *)malloc(sizeof *gs) : NULL;
  if (ga == NULL || (out_schema != NULL && gs == NULL)) {
    free(ga);
    free(gs);
    out->release(out);
    out->release = NULL;
    if (out_schema) {
      out_schema->release(out_schema);
      out_schema->release = NULL;
    }
    return colioi_fail(COLIO_EINTERNAL, "%s: out of memory", name);
  }
  ga->release = out->release;
  ga->private_data = out->private_data;
  out->release = guarded_array_release;
  out->private_data = ga;
  if (out_schema) {
    gs->release = out_schema->release;
    gs->private_data = out_schema->private_data;
    out_schema->release = guarded_schema_release;
    out_schema->private_data = gs;
  }
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
  int rc = colioGoReadRangesArrow((uintptr_t)src, (void *)ranges, n, out, out_schema,
                                  colioi_tls_level);
  if (rc != COLIO_OK) {
    clear_outputs(out, out_schema);
    return rc;
  }
  return guard_export("colio_read_ranges_arrow", out, out_schema);
}

int colio_read_arrow_buffer(colio_source *src, int64_t offset, int64_t size,
                            struct ArrowArray *out, struct ArrowSchema *out_schema) {
  COLIOI_ENTER("colio_read_arrow_buffer");
  COLIOI_NEED("colio_read_arrow_buffer", out);
  clear_outputs(out, out_schema);
  int rc = colioGoReadArrowBuffer((uintptr_t)src, offset, size, out, out_schema, colioi_tls_level);
  if (rc != COLIO_OK) {
    clear_outputs(out, out_schema);
    return rc;
  }
  return guard_export("colio_read_arrow_buffer", out, out_schema);
}
