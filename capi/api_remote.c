/*
 * api_remote.c: colio_source_open_url, the HTTP(S) and S3 sources.
 *
 * Checked like the other openers (api_source.c): the fork guard, the out
 * parameter, then the Go twin. On failure *out is NULL.
 */
#include "_cgo_export.h"
#include "colioi.h"

int colio_source_open_url(const char *url, const char *const *options, colio_source **out) {
  COLIOI_ENTER("colio_source_open_url");
  COLIOI_NEED("colio_source_open_url", out);
  *out = NULL;
  uintptr_t tok = 0;
  int rc = colioGoSourceOpenURL((char *)url, (char **)options, &tok);
  if (rc == COLIO_OK)
    *out = (colio_source *)tok;
  return rc;
}

int colio_source_etag(colio_source *src, char *buf, size_t size, size_t *len, int *stable) {
  COLIOI_ENTER("colio_source_etag");
  if (len)
    *len = 0;
  if (stable)
    *stable = 0;
  return colioGoSourceETag((uintptr_t)src, buf, size, len, stable);
}
