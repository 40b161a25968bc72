/*
 * api_work.c: queued sources, whose parts the caller's own threads run
 * (colio_source_from_queue, colio_work_take, colio_work_done,
 * colio_work_next), and reads whose end those threads are told of
 * (colio_read_async_tagged, colio_work_step).
 *
 * A thread that took a part and has not handed it back is "working". If it
 * then waits on a colio future (its callback reads through colio and
 * waits), colio_future_wait tells the queue, which lets another worker take
 * a part in its place: the nested read it waits for is never stuck behind
 * it, however few workers there are.
 */
#include <string.h>

#include "_cgo_export.h"
#include "colioi.h"

static _Thread_local int working;
static _Thread_local int level_before;

/* Fills *out with the part taken and makes this thread "working" on it:
 * what the part's callback submits goes where its submitter's level says
 * (see callbacks.c). */
static void hand_out(colio_work *out, uintptr_t ctx, void *buf, int64_t size, int64_t offset,
                     int64_t token, int64_t taken, int level) {
  out->ctx = (void *)ctx;
  out->buf = buf;
  out->size = size;
  out->offset = offset;
  out->token = token;
  out->out = taken;
  working = 1;
  level_before = colioi_tls_level;
  if (level > colioi_tls_level)
    colioi_tls_level = level;
}

int colio_source_from_queue(int64_t size, uint32_t flags, void *ctx, colio_source **out) {
  COLIOI_ENTER("colio_source_from_queue");
  COLIOI_NEED("colio_source_from_queue", out);
  *out = NULL;
  uintptr_t tok = 0;
  int rc = colioGoSourceFromQueue(size, flags, (uintptr_t)ctx, &tok);
  if (rc == COLIO_OK)
    *out = (colio_source *)tok;
  return rc;
}

int colio_work_take(int64_t timeout_ns, colio_work *out) {
  COLIOI_ENTER("colio_work_take");
  COLIOI_NEED("colio_work_take", out);
  memset(out, 0, sizeof *out);
  if (working)
    return colioi_fail(COLIO_EINVAL, "colio_work_take: this thread has a part it has not "
                                     "handed back with colio_work_done");
  uintptr_t ctx = 0;
  void *buf = NULL;
  int64_t size = 0, offset = 0, token = 0, taken = 0;
  int level = 0;
  int rc = colioGoWorkTake(timeout_ns, &ctx, &buf, &size, &offset, &token, &taken, &level);
  if (rc != COLIO_OK)
    return rc;
  hand_out(out, ctx, buf, size, offset, token, taken, level);
  return COLIO_OK;
}

int colio_work_done(int64_t token, int64_t result) {
  COLIOI_ENTER("colio_work_done");
  int rc = colioGoWorkDone(token, result);
  if (rc == COLIO_OK && working) {
    working = 0;
    colioi_tls_level = level_before;
  }
  return rc;
}

int colio_work_next(int64_t token, int64_t result, int64_t timeout_ns, colio_work *out) {
  if (token) {
    int rc = colio_work_done(token, result);
    if (rc != COLIO_OK)
      return rc;
  }
  return colio_work_take(timeout_ns, out);
}

int colioi_work_wait_begin(int64_t timeout_ns) {
  if (!working || timeout_ns == 0)
    return 0;
  colioGoWorkBlocked(1);
  return 1;
}

void colioi_work_wait_end(int began) {
  if (began)
    colioGoWorkBlocked(-1);
}

int colio_read_async_tagged(colio_source *src, void *buf, int64_t size, int64_t offset,
                            uint64_t tag, colio_future **out) {
  COLIOI_ENTER("colio_read_async_tagged");
  COLIOI_NEED("colio_read_async_tagged", out);
  *out = NULL;
  uintptr_t tok = 0;
  int rc = colioGoReadAsyncTagged((uintptr_t)src, buf, size, offset, tag, &tok,
                                  colioi_tls_level);
  if (rc == COLIO_OK)
    *out = (colio_future *)tok;
  return rc;
}

int colio_work_step(int64_t token, int64_t result, int64_t timeout_ns, colio_work *out,
                    colio_work_note *notes, int64_t max_notes, int64_t *nnotes) {
  COLIOI_ENTER("colio_work_step");
  COLIOI_NEED("colio_work_step", out);
  COLIOI_NEED("colio_work_step", nnotes);
  *nnotes = 0;
  memset(out, 0, sizeof *out);
  if (max_notes < 0 || (max_notes > 0 && notes == NULL))
    return colioi_fail(COLIO_EINVAL, "colio_work_step: max_notes %lld needs notes to hold them",
                       (long long)max_notes);
  if (working && !token)
    return colioi_fail(COLIO_EINVAL, "colio_work_step: this thread has a part it has not "
                                     "handed back");
  uintptr_t ctx = 0;
  void *buf = NULL;
  int64_t size = 0, offset = 0, tok = 0, taken = 0;
  int level = 0, handed = 0;
  /* The hand-back and the next take are one Go call, so the queue leaves
   * the next part to this thread instead of waking another for it. */
  int rc = colioGoWorkStep(token, result, &handed, timeout_ns, notes, max_notes, nnotes, &ctx,
                           &buf, &size, &offset, &tok, &taken, &level);
  if (handed && working) {
    working = 0;
    colioi_tls_level = level_before;
  }
  if (rc != COLIO_OK || tok == 0)
    return rc;
  hand_out(out, ctx, buf, size, offset, tok, taken, level);
  return COLIO_OK;
}

int colio_work_wait(int64_t timeout_ns) {
  COLIOI_ENTER("colio_work_wait");
  return colioGoWorkWait(timeout_ns);
}
