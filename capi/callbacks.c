/*
 * callbacks.c: calls into user C code.
 *
 * cgo cannot call a C function pointer, so Go calls these shims, which do.
 * The shims also carry the pool level: a user callback runs on a worker of
 * level N, and anything it submits (a nested colio_read_async it then waits
 * on) must go to level N+1, or, with all level-N slots held by callbacks
 * that wait, it would queue behind them forever. Go passes the level of the
 * running task here; the shim stores it in a thread-local that every entry
 * point passes back to Go. The previous value is restored afterwards, so a
 * callback that runs inline on the caller's thread leaves it as it was.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "colioi.h"

_Thread_local int colioi_tls_level;
_Thread_local uintptr_t colioi_tls_in_done;

/* Set once by colio_stop_callbacks and never cleared. A language runtime
 * that is shutting down (Python finalising its interpreter) cannot take a
 * call any more: a ctypes callback entered then would touch freed thread
 * states. The check sits here, the last step before the user's code, so
 * that no path (a queued task, a stream's read-ahead, a completion) can
 * reach a callback after the flag is set. */
static atomic_int stopped;

int colio_stop_callbacks(void) {
  atomic_store(&stopped, 1);
  return COLIO_OK;
}

int colioi_callbacks_stopped(void) { return atomic_load_explicit(&stopped, memory_order_relaxed); }

/* Never lower the level: a callback run inline on a thread that is itself
 * inside a deeper callback keeps the deeper level. */
static int enter_level(int level) {
  int prev = colioi_tls_level;
  if (level > prev)
    colioi_tls_level = level;
  return prev;
}

int64_t colioi_call_source_read(const colio_source_callbacks *cb, void *buf, int64_t size,
                                int64_t offset, int level) {
  if (colioi_callbacks_stopped())
    return -ECANCELED;
  int prev = enter_level(level);
  int64_t r = cb->read(cb->ctx, buf, size, offset);
  colioi_tls_level = prev;
  return r;
}

/* Releases the user's context, then colio's copy of the struct. */
void colioi_call_source_release(colio_source_callbacks *cb) {
  if (cb->release && !colioi_callbacks_stopped())
    cb->release(cb->ctx);
  free(cb);
}

int64_t colioi_call_sink_write(const colio_sink_callbacks *cb, const void *buf, int64_t size,
                               int64_t offset, int level) {
  if (colioi_callbacks_stopped())
    return -ECANCELED;
  int prev = enter_level(level);
  int64_t r = cb->write(cb->ctx, buf, size, offset);
  colioi_tls_level = prev;
  return r;
}

int colioi_call_sink_flush(const colio_sink_callbacks *cb, int fsync, int level) {
  if (!cb->flush)
    return 0;
  if (colioi_callbacks_stopped())
    return -ECANCELED;
  int prev = enter_level(level);
  int r = cb->flush(cb->ctx, fsync);
  colioi_tls_level = prev;
  return r;
}

void colioi_call_sink_release(colio_sink_callbacks *cb) {
  if (cb->release && !colioi_callbacks_stopped())
    cb->release(cb->ctx);
  free(cb);
}

/* Runs on the notifier. colioi_tls_in_done lets colio_future_free, called
 * from inside the callback, know not to wait for the callback to end. Once
 * callbacks are stopped a completion is dropped: whoever waits on the
 * future with colio_future_wait still sees it. */
void colioi_call_done(colio_future_callback cb, uintptr_t ctx, uintptr_t fut, int status,
                      int64_t nbytes) {
  if (colioi_callbacks_stopped())
    return;
  uintptr_t prev = colioi_tls_in_done;
  colioi_tls_in_done = fut;
  cb((void *)ctx, (colio_future *)fut, status, nbytes);
  colioi_tls_in_done = prev;
}
