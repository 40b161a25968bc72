/*
 * api_write.c: the colio_write* entry points. See api_read.c.
 */
#include "_cgo_export.h"
#include "colioi.h"

int colio_write(colio_sink *sink, const void *buf, int64_t size, int64_t offset,
                int64_t *nwritten) {
  COLIOI_ENTER("colio_write");
  int64_t n = 0, at = 0;
  if (colioi_fast_write((uintptr_t)sink, buf, size, &offset, &n, &at)) {
    if (nwritten)
      *nwritten = n;
    return COLIO_OK;
  }
  int rc = colioGoWrite((uintptr_t)sink, (void *)buf, size, offset, &n, colioi_tls_level);
  if (nwritten)
    *nwritten = n;
  return rc;
}

int colio_write_async(colio_sink *sink, const void *buf, int64_t size, int64_t offset,
                      colio_future **out) {
  COLIOI_ENTER("colio_write_async");
  COLIOI_NEED("colio_write_async", out);
  *out = NULL;
  uintptr_t tok = 0;
  int rc = colioGoWriteAsync((uintptr_t)sink, (void *)buf, size, offset, &tok, colioi_tls_level);
  if (rc == COLIO_OK)
    *out = (colio_future *)tok;
  return rc;
}

int colio_writev_async(colio_sink *sink, const colio_range *ranges, int64_t n,
                       colio_future **futures_out) {
  COLIOI_ENTER("colio_writev_async");
  return colioGoWritevAsync((uintptr_t)sink, (void *)ranges, n, (void *)futures_out,
                            colioi_tls_level);
}
