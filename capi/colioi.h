/*
 * colioi.h: declarations shared by libcolio's own C files and its Go code.
 * Internal: never installed. Nothing declared here is exported (the
 * version script colio.map exports only the functions of colio.h), and no
 * name here starts with "colio_" so that it cannot be mistaken for API.
 */
#ifndef COLIOI_H
#define COLIOI_H

#include <stddef.h>
#include <stdint.h>

#include "colio.h"

/* Handles are integer tokens carried in pointer-sized values. */
_Static_assert(sizeof(void *) == sizeof(uintptr_t), "pointer and uintptr_t differ");
_Static_assert(sizeof(uintptr_t) == 8, "colio handles need 64-bit pointers");

/* ---- errors.c: the calling thread's last error ----------------------- */

/* Records code, errnum and the message (len bytes, need not be
 * NUL-terminated) as this thread's last error; returns code. */
int colioi_set_error(int code, int errnum, const char *msg, size_t len);
/* printf-style variant for the C side. */
int colioi_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- fork.c: the fork guard ----------------------------------------- */

/* Set in the child by a pthread_atfork handler. */
extern volatile int colioi_forked;
/* Records COLIO_EFORK as the last error (name: the entry point); returns it. */
int colioi_fork_error(const char *name);

/* Every entry point that would enter Go starts with this: the Go runtime
 * did not survive the fork, so calling into it could hang or crash. */
#define COLIOI_ENTER(name)                                   \
  do {                                                       \
    if (__builtin_expect(colioi_forked, 0))                  \
      return colioi_fork_error(name);                        \
  } while (0)

/* Required out-parameters are checked in C, before Go is entered. */
#define COLIOI_NEED(name, ptr)                                                \
  do {                                                                        \
    if ((ptr) == NULL)                                                        \
      return colioi_fail(COLIO_EINVAL, "%s: %s is NULL", name, #ptr);         \
  } while (0)

/* ---- callbacks.c: calling user C code ------------------------------- */

/* The pool level that submissions from this thread go to: 0 on a thread
 * of the caller's, the running task's level + 1 inside a user callback
 * that colio called on one of its workers. */
extern _Thread_local int colioi_tls_level;
/* The future whose completion callback this thread is running, or 0. */
extern _Thread_local uintptr_t colioi_tls_in_done;

/* api_work.c: a wait by a thread that runs a queued part (a nested read)
 * lets another worker take a part meanwhile. begin returns whether it did
 * so; pass that to end. */
int colioi_work_wait_begin(int64_t timeout_ns);
void colioi_work_wait_end(int began);

int64_t colioi_call_source_read(const colio_source_callbacks *cb, void *buf, int64_t size,
                                int64_t offset, int level);
void colioi_call_source_release(colio_source_callbacks *cb);
int64_t colioi_call_sink_write(const colio_sink_callbacks *cb, const void *buf, int64_t size,
                               int64_t offset, int level);
int colioi_call_sink_flush(const colio_sink_callbacks *cb, int fsync, int level);
void colioi_call_sink_release(colio_sink_callbacks *cb);
void colioi_call_done(colio_future_callback cb, uintptr_t ctx, uintptr_t fut, int status,
                      int64_t nbytes);

/* ---- fastpath.c: small synchronous reads and writes without entering Go - */

void colioi_fast_set_threshold(int64_t v);
void colioi_fast_set_write_threshold(int64_t v);
void colioi_fast_register(uint64_t tok, int fd, const void *mem, int64_t mem_size);
void colioi_fast_register_sink(uint64_t tok, int fd, int64_t *next, int64_t *end);
int colioi_fast_write(uint64_t tok, const void *buf, int64_t size, int64_t *offset,
                      int64_t *nwritten, int64_t *placed);
void colioi_fast_unregister(uint64_t tok);
int colioi_fast_read(uint64_t tok, void *buf, int64_t size, int64_t offset, int64_t *nread,
                     int *rc);

/* ---- stats ------------------------------------------------------------ */

/* The v1 colio_counters, filled by Go; colio_stats copies what fits. */
typedef colio_counters colioi_counters;
/* Adds the fast path's counters to c. */
void colioi_fast_stats(colio_counters *c);

#endif /* COLIOI_H */
