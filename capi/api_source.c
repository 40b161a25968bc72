/*
 * api_source.c: the colio_source_* entry points.
 *
 * Each entry point checks the fork guard, checks the out-parameters it
 * must write, and calls its Go twin. Tokens travel as uintptr_t and become
 * colio_source* only here. On failure *out is NULL.
 */
#include <stdlib.h>
#include <string.h>

#include "_cgo_export.h"
#include "colioi.h"

#define OUT_TOKEN(out, rc, tok, type) \
  do {                                \
    if ((rc) == COLIO_OK)             \
      *(out) = (type *)(tok);         \
  } while (0)

int colio_source_open_file(const char *path, colio_source **out) {
  COLIOI_ENTER("colio_source_open_file");
  COLIOI_NEED("colio_source_open_file", out);
  *out = NULL;
  uintptr_t tok = 0;
  int rc = colioGoSourceOpenFile((char *)path, &tok);
  OUT_TOKEN(out, rc, tok, colio_source);
  return rc;
}

int colio_source_from_memory(const void *data, int64_t size, colio_source **out) {
  COLIOI_ENTER("colio_source_from_memory");
  COLIOI_NEED("colio_source_from_memory", out);
  *out = NULL;
  uintptr_t tok = 0;
  int rc = colioGoSourceFromMemory((void *)data, size, &tok);
  OUT_TOKEN(out, rc, tok, colio_source);
  return rc;
}

/* The oldest colio_source_callbacks this library accepts: the first
 * version of the struct, which is the current one. */
#define SOURCE_CB_V1 (offsetof(colio_source_callbacks, flags) + sizeof(uint32_t))

int colio_source_from_callbacks(const colio_source_callbacks *cb, int64_t size,
                                colio_source **out) {
  COLIOI_ENTER("colio_source_from_callbacks");
  COLIOI_NEED("colio_source_from_callbacks", out);
  *out = NULL;
  COLIOI_NEED("colio_source_from_callbacks", cb);
  if (cb->struct_size < SOURCE_CB_V1)
    return colioi_fail(COLIO_EINVAL,
                       "colio_source_from_callbacks: cb->struct_size is %zu, smaller than any "
                       "version of colio_source_callbacks; set it to "
                       "sizeof(colio_source_callbacks) (%zu)",
                       cb->struct_size, sizeof(colio_source_callbacks));
  /* colio's own copy, in this library's layout: fields a newer header
   * added past it are ignored, and Go keeps only this C pointer. */
  colio_source_callbacks *copy = calloc(1, sizeof *copy);
  if (!copy)
    return colioi_fail(COLIO_EINTERNAL, "colio_source_from_callbacks: out of memory");
  memcpy(copy, cb, cb->struct_size < sizeof *copy ? cb->struct_size : sizeof *copy);
  copy->struct_size = sizeof *copy;
  uintptr_t tok = 0;
  int rc = colioGoSourceFromCallbacks(copy, size, &tok);
  if (rc != COLIO_OK)
    free(copy);
  OUT_TOKEN(out, rc, tok, colio_source);
  return rc;
}

int colio_source_size(colio_source *src, int64_t *out) {
  COLIOI_ENTER("colio_source_size");
  COLIOI_NEED("colio_source_size", out);
  int64_t n = 0;
  int rc = colioGoSourceSize((uintptr_t)src, &n);
  if (rc == COLIO_OK)
    *out = n;
  return rc;
}

int colio_source_free(colio_source *src) {
  COLIOI_ENTER("colio_source_free");
  if (!src)
    return COLIO_OK;
  return colioGoSourceFree((uintptr_t)src);
}
