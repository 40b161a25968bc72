/*
 * api_fetch.c: colio_fetch_urls and colio_fetch_copy, whole remote objects
 * fetched by the library (fetch.go).
 */
#include "_cgo_export.h"
#include "colioi.h"

int colio_fetch_urls(const char *const *urls, int64_t n, const char *const *options, colio_cq *cq,
                     uint64_t ctx, colio_future **out) {
  COLIOI_ENTER("colio_fetch_urls");
  COLIOI_NEED("colio_fetch_urls", out);
  *out = NULL;
  uintptr_t tok = 0;
  int rc = colioGoFetchURLs((char **)urls, n, (char **)options, (uintptr_t)cq, ctx, &tok,
                            colioi_tls_level);
  if (rc == COLIO_OK)
    *out = (colio_future *)tok;
  return rc;
}

int colio_fetch_copy(colio_future *fut, int64_t index, void *buf, int64_t size, int64_t *copied) {
  COLIOI_ENTER("colio_fetch_copy");
  int64_t n = 0;
  int rc = colioGoFetchCopy((uintptr_t)fut, index, buf, size, &n);
  if (copied)
    *copied = n;
  return rc;
}
