/*
 * api_sink.c: the colio_sink_* entry points. See api_source.c.
 */
#include <stdlib.h>
#include <string.h>

#include "_cgo_export.h"
#include "colioi.h"

/* rc is the Go call's status and tok what it wrote; taking tok by
 * pointer keeps it from being read before the call runs. */
static int out_sink(colio_sink **out, int rc, const uintptr_t *tok) {
  if (rc == COLIO_OK)
    *out = (colio_sink *)*tok;
  return rc;
}

int colio_sink_open_file(const char *path, int flags, colio_sink **out) {
  COLIOI_ENTER("colio_sink_open_file");
  COLIOI_NEED("colio_sink_open_file", out);
  *out = NULL;
  uintptr_t tok = 0;
  return out_sink(out, colioGoSinkOpenFile((char *)path, flags, &tok), &tok);
}

int colio_sink_from_memory(void *buf, int64_t capacity, colio_sink **out) {
  COLIOI_ENTER("colio_sink_from_memory");
  COLIOI_NEED("colio_sink_from_memory", out);
  *out = NULL;
  uintptr_t tok = 0;
  return out_sink(out, colioGoSinkFromMemory(buf, capacity, &tok), &tok);
}

int colio_sink_void(colio_sink **out) {
  COLIOI_ENTER("colio_sink_void");
  COLIOI_NEED("colio_sink_void", out);
  *out = NULL;
  uintptr_t tok = 0;
  return out_sink(out, colioGoSinkVoid(&tok), &tok);
}

/* The first version of colio_sink_callbacks, which is the current one. */
#define SINK_CB_V1 (offsetof(colio_sink_callbacks, append_start) + sizeof(int64_t))

int colio_sink_from_callbacks(const colio_sink_callbacks *cb, colio_sink **out) {
  COLIOI_ENTER("colio_sink_from_callbacks");
  COLIOI_NEED("colio_sink_from_callbacks", out);
  *out = NULL;
  COLIOI_NEED("colio_sink_from_callbacks", cb);
  if (cb->struct_size < SINK_CB_V1)
    return colioi_fail(COLIO_EINVAL,
                       "colio_sink_from_callbacks: cb->struct_size is %zu, smaller than any "
                       "version of colio_sink_callbacks; set it to "
                       "sizeof(colio_sink_callbacks) (%zu)",
                       cb->struct_size, sizeof(colio_sink_callbacks));
  colio_sink_callbacks *copy = calloc(1, sizeof *copy);
  if (!copy)
    return colioi_fail(COLIO_EINTERNAL, "colio_sink_from_callbacks: out of memory");
  memcpy(copy, cb, cb->struct_size < sizeof *copy ? cb->struct_size : sizeof *copy);
  copy->struct_size = sizeof *copy;
  uintptr_t tok = 0;
  int rc = colioGoSinkFromCallbacks(copy, &tok);
  if (rc != COLIO_OK)
    free(copy);
  return out_sink(out, rc, &tok);
}

int colio_sink_flush(colio_sink *sink, int fsync) {
  COLIOI_ENTER("colio_sink_flush");
  return colioGoSinkFlush((uintptr_t)sink, fsync, colioi_tls_level);
}

int colio_sink_size(colio_sink *sink, int64_t *out) {
  COLIOI_ENTER("colio_sink_size");
  COLIOI_NEED("colio_sink_size", out);
  int64_t n = 0;
  int rc = colioGoSinkSize((uintptr_t)sink, &n);
  if (rc == COLIO_OK)
    *out = n;
  return rc;
}

int colio_sink_free(colio_sink *sink) {
  COLIOI_ENTER("colio_sink_free");
  if (!sink)
    return COLIO_OK;
  return colioGoSinkFree((uintptr_t)sink);
}
