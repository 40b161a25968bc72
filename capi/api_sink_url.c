/*
 * api_sink_url.c: colio_sink_open_url and colio_sink_abort, the S3 sink.
 * Checked like the other openers (api_sink.c).
 */
#include "_cgo_export.h"
#include "colioi.h"

int colio_sink_open_url(const char *url, const char *const *options, int flags, colio_sink **out) {
  COLIOI_ENTER("colio_sink_open_url");
  COLIOI_NEED("colio_sink_open_url", out);
  *out = NULL;
  uintptr_t tok = 0;
  int rc = colioGoSinkOpenURL((char *)url, (char **)options, flags, &tok);
  if (rc == COLIO_OK)
    *out = (colio_sink *)tok;
  return rc;
}

int colio_sink_abort(colio_sink *sink) {
  COLIOI_ENTER("colio_sink_abort");
  if (!sink)
    return COLIO_OK;
  return colioGoSinkAbort((uintptr_t)sink);
}
