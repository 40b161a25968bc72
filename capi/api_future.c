/*
 * api_future.c: the colio_future_* entry points.
 */
#include "_cgo_export.h"
#include "colioi.h"

int colio_future_wait(colio_future *fut, int64_t timeout_ns, int64_t *nbytes) {
  COLIOI_ENTER("colio_future_wait");
  int64_t n = 0;
  int nested = colioi_work_wait_begin(timeout_ns);
  int rc = colioGoFutureWait((uintptr_t)fut, timeout_ns, &n);
  colioi_work_wait_end(nested);
  if (nbytes)
    *nbytes = n;
  return rc;
}

int colio_future_done(colio_future *fut) {
  COLIOI_ENTER("colio_future_done");
  return colioGoFutureDone((uintptr_t)fut);
}

int colio_future_cancel(colio_future *fut, int *cancelled) {
  COLIOI_ENTER("colio_future_cancel");
  int c = 0;
  int rc = colioGoFutureCancel((uintptr_t)fut, &c);
  if (cancelled)
    *cancelled = c;
  return rc;
}

int colio_future_on_done(colio_future *fut, colio_future_callback cb, void *ctx) {
  COLIOI_ENTER("colio_future_on_done");
  return colioGoFutureOnDone((uintptr_t)fut, cb, (uintptr_t)ctx);
}

int colio_future_error(colio_future *fut, const char **message, int *errnum) {
  COLIOI_ENTER("colio_future_error");
  char *m = NULL;
  int e = 0;
  int rc = colioGoFutureError((uintptr_t)fut, &m, &e);
  if (message)
    *message = m ? m : "";
  if (errnum)
    *errnum = e;
  return rc;
}

int colio_future_offset(colio_future *fut, int64_t *out) {
  COLIOI_ENTER("colio_future_offset");
  COLIOI_NEED("colio_future_offset", out);
  int64_t off = 0;
  int rc = colioGoFutureOffset((uintptr_t)fut, &off);
  if (rc == COLIO_OK)
    *out = off;
  return rc;
}

int colio_future_free(colio_future *fut) {
  COLIOI_ENTER("colio_future_free");
  if (!fut)
    return COLIO_OK;
  return colioGoFutureFree((uintptr_t)fut, colioi_tls_in_done);
}
