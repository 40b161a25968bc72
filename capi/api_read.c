/*
 * api_read.c: the colio_read* entry points. Each passes the calling
 * thread's pool level (colioi_tls_level, non-zero inside a user callback)
 * so that a read started from a callback runs on a deeper level.
 */
#include "_cgo_export.h"
#include "colioi.h"

int colio_read(colio_source *src, void *buf, int64_t size, int64_t offset, int64_t *nread) {
  COLIOI_ENTER("colio_read");
  int64_t n = 0;
  int rc;
  if (colioi_fast_read((uintptr_t)src, buf, size, offset, &n, &rc)) {
    if (nread)
      *nread = n;
    return rc;
  }
  rc = colioGoRead((uintptr_t)src, buf, size, offset, &n, colioi_tls_level);
  if (nread)
    *nread = n;
  return rc;
}

int colio_read_async(colio_source *src, void *buf, int64_t size, int64_t offset,
                     colio_future **out) {
  COLIOI_ENTER("colio_read_async");
  COLIOI_NEED("colio_read_async", out);
  *out = NULL;
  uintptr_t tok = 0;
  int rc = colioGoReadAsync((uintptr_t)src, buf, size, offset, &tok, colioi_tls_level);
  if (rc == COLIO_OK)
    *out = (colio_future *)tok;
  return rc;
}

/* futures_out is written from Go as an array of uintptr_t, which has the
 * size and representation of colio_future* (checked in colioi.h). */
int colio_readv_async(colio_source *src, const colio_range *ranges, int64_t n,
                      colio_future **futures_out) {
  COLIOI_ENTER("colio_readv_async");
  return colioGoReadvAsync((uintptr_t)src, (void *)ranges, n, (void *)futures_out,
                           colioi_tls_level);
}
