/*
 * api_batch.c: batched fan-out reads and completion queues (issue 15).
 */
#include "_cgo_export.h"
#include "colioi.h"

int colio_readv(colio_source *src, const colio_range *ranges, int64_t n, uint32_t flags,
                int64_t *nread, int *status) {
  COLIOI_ENTER("colio_readv");
  /* A Python worker blocked here frees its place (see api_work.c). */
  int nested = colioi_work_wait_begin(COLIO_WAIT_FOREVER);
  int rc = colioGoReadv((uintptr_t)src, (void *)ranges, n, flags, nread, status, colioi_tls_level);
  colioi_work_wait_end(nested);
  return rc;
}

int colio_readv_batch(colio_source *src, const colio_range *ranges, int64_t n, uint32_t flags,
                      int64_t *nread, int *status, colio_cq *cq, uint64_t ctx,
                      colio_future **out) {
  COLIOI_ENTER("colio_readv_batch");
  COLIOI_NEED("colio_readv_batch", out);
  *out = NULL;
  uintptr_t tok = 0;
  int rc = colioGoReadvBatch((uintptr_t)src, (void *)ranges, n, flags, nread, status,
                             (uintptr_t)cq, ctx, &tok, colioi_tls_level);
  if (rc == COLIO_OK)
    *out = (colio_future *)tok;
  return rc;
}

int colio_readv_packed(colio_source *src, const int64_t *pairs, int64_t n, uint32_t flags,
                       void *buf, int64_t buf_size, int64_t *nread, int *status, colio_cq *cq,
                       uint64_t ctx, colio_future **out) {
  COLIOI_ENTER("colio_readv_packed");
  uintptr_t tok = 0;
  if (out == NULL) { /* blocking, as colio_readv */
    int nested = colioi_work_wait_begin(COLIO_WAIT_FOREVER);
    int rc = colioGoReadvPacked((uintptr_t)src, (int64_t *)pairs, n, flags, buf, buf_size, nread,
                                status, (uintptr_t)cq, ctx, NULL, colioi_tls_level);
    colioi_work_wait_end(nested);
    return rc;
  }
  *out = NULL;
  int rc = colioGoReadvPacked((uintptr_t)src, (int64_t *)pairs, n, flags, buf, buf_size, nread,
                              status, (uintptr_t)cq, ctx, &tok, colioi_tls_level);
  if (rc == COLIO_OK)
    *out = (colio_future *)tok;
  return rc;
}

int colio_future_wait_part(colio_future *fut, int64_t index, int64_t timeout_ns,
                           int64_t *nbytes) {
  COLIOI_ENTER("colio_future_wait_part");
  int64_t n = 0;
  int nested = colioi_work_wait_begin(timeout_ns);
  int rc = colioGoFutureWaitPart((uintptr_t)fut, index, timeout_ns, &n);
  colioi_work_wait_end(nested);
  if (nbytes)
    *nbytes = n;
  return rc;
}

int colio_future_cancel_part(colio_future *fut, int64_t index, int *cancelled) {
  COLIOI_ENTER("colio_future_cancel_part");
  int c = 0;
  int rc = colioGoFutureCancelPart((uintptr_t)fut, index, &c);
  if (cancelled)
    *cancelled = c;
  return rc;
}

int colio_future_error_part(colio_future *fut, int64_t index, const char **message,
                            int *errnum) {
  COLIOI_ENTER("colio_future_error_part");
  char *m = NULL;
  int e = 0;
  int rc = colioGoFutureErrorPart((uintptr_t)fut, index, &m, &e);
  if (message)
    *message = m ? m : "";
  if (errnum)
    *errnum = e;
  return rc;
}

int colio_cq_new(colio_cq **out) {
  COLIOI_ENTER("colio_cq_new");
  COLIOI_NEED("colio_cq_new", out);
  *out = NULL;
  uintptr_t tok = 0;
  int rc = colioGoCqNew(&tok);
  if (rc == COLIO_OK)
    *out = (colio_cq *)tok;
  return rc;
}

int colio_cq_wait(colio_cq *cq, colio_cq_entry *entries, int64_t max, int64_t timeout_ns,
                  int64_t *count) {
  COLIOI_ENTER("colio_cq_wait");
  int64_t k = 0;
  int nested = colioi_work_wait_begin(timeout_ns);
  int rc = colioGoCqWait((uintptr_t)cq, entries, max, timeout_ns, &k);
  colioi_work_wait_end(nested);
  if (count)
    *count = k;
  return rc;
}

int colio_cq_free(colio_cq *cq) {
  COLIOI_ENTER("colio_cq_free");
  if (!cq)
    return COLIO_OK;
  return colioGoCqFree((uintptr_t)cq);
}

int colio_write_ex(colio_sink *sink, const void *buf, int64_t size, int64_t offset,
                   int64_t *nwritten, int64_t *placed) {
  COLIOI_ENTER("colio_write_ex");
  int64_t n = 0, at = 0;
  if (colioi_fast_write((uintptr_t)sink, buf, size, &offset, &n, &at)) {
    if (nwritten)
      *nwritten = n;
    if (placed)
      *placed = at;
    return COLIO_OK;
  }
  int rc = colioGoWriteEx((uintptr_t)sink, (void *)buf, size, offset, &n, &at, colioi_tls_level);
  if (nwritten)
    *nwritten = n;
  if (placed)
    *placed = at;
  return rc;
}
