/*
 * fastpath.c: small synchronous reads of local files and memory, in C.
 *
 * colio_read of a few KiB from a file in the page cache is one pread of
 * about 0.8 us. Entering Go for it (cgo's C-to-Go transition, the handle
 * table, the engine's bookkeeping) added 0.3 to 0.4 us on top, measured
 * from C; from Python, through ctypes, that was the difference between
 * colio and os.preadv that users notice. So colio_read serves reads at or
 * under small_read_threshold of file and memory sources here, on the
 * caller, without entering Go; everything else, and every error that needs
 * the engine's wording, goes through Go as before.
 *
 * Safety against colio_source_free: Go registers a source here after it
 * made the handle, and unregisters it (waiting for readers in this file to
 * leave) before it closes the descriptor. A reader announces itself in the
 * entry's user count, then checks that the entry still carries its token;
 * unregistering clears the token, then waits for the count to drop. With
 * sequentially consistent atomics on both sides, either the reader sees
 * the cleared token and falls back to Go (which reports the freed handle),
 * or the unregistering side sees the reader and waits for it. A descriptor
 * is therefore never used after close, nor a recycled one read.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "colioi.h"

#define INDEX_BITS 28 /* as in handles.go */
#define CHUNK_BITS 12
#define CHUNK (1 << CHUNK_BITS)
#define NCHUNKS (1 << (INDEX_BITS - CHUNK_BITS))

struct fast_entry {
  _Atomic uint64_t token; /* 0: no fast source here */
  _Atomic int64_t users;
  int fd;                 /* -1 for memory */
  const char *mem;
  int64_t mem_size;
};

/* Chunks of entries, made on first use and never freed (at most a few
 * hundred KiB for a million live sources); untouched pointers cost no
 * resident memory. */
static _Atomic(struct fast_entry *) chunks[NCHUNKS];

static _Atomic int64_t threshold = -1; /* -1 until Go sets it: no fast path */
static _Atomic int64_t n_ops, n_bytes, n_errors, n_in_flight, n_peak;

static struct fast_entry *entry(uint64_t tok, int create) {
  uint64_t index = tok & ((1ull << INDEX_BITS) - 1);
  _Atomic(struct fast_entry *) *cp = &chunks[index >> CHUNK_BITS];
  struct fast_entry *c = atomic_load(cp);
  if (!c) {
    if (!create)
      return NULL;
    struct fast_entry *fresh = calloc(CHUNK, sizeof *fresh);
    if (!fresh)
      return NULL;
    if (!atomic_compare_exchange_strong(cp, &c, fresh))
      free(fresh); /* another thread made it; c now holds theirs */
    else
      c = fresh;
  }
  return &c[index & (CHUNK - 1)];
}

void colioi_fast_set_threshold(int64_t v) { atomic_store(&threshold, v); }

void colioi_fast_register(uint64_t tok, int fd, const void *mem, int64_t mem_size) {
  struct fast_entry *e = entry(tok, 1);
  if (!e)
    return; /* out of memory: that source simply takes the Go path */
  e->fd = fd;
  e->mem = (const char *)mem;
  e->mem_size = mem_size;
  atomic_store(&e->token, tok); /* publishes the fields above */
}

void colioi_fast_unregister(uint64_t tok) {
  struct fast_entry *e = entry(tok, 0);
  if (!e)
    return;
  uint64_t want = tok;
  if (!atomic_compare_exchange_strong(&e->token, &want, 0))
    return; /* never registered (or registration failed) */
  while (atomic_load(&e->users) > 0)
    sched_yield(); /* a read in progress: one pread at most */
}

void colioi_fast_stats(colio_counters *c) {
  int64_t ops = atomic_load(&n_ops);
  c->ops_submitted += ops;
  c->ops_inline += ops;
  c->bytes_read += atomic_load(&n_bytes);
  c->errors += atomic_load(&n_errors);
  c->in_flight += atomic_load(&n_in_flight);
  int64_t peak = atomic_load(&n_peak);
  if (peak > c->peak_in_flight)
    c->peak_in_flight = peak; /* the two paths' peaks are kept apart */
}

static int io_error(int err, int64_t offset) {
  int code = COLIO_EIO;
  if (err == EISDIR || err == EINVAL || err == EBADF)
    code = COLIO_EINVAL; /* as Go's errs.Wrap classifies them */
  atomic_fetch_add(&n_errors, 1);
  char msg[256];
  int n = snprintf(msg, sizeof msg, "colio_read: read at offset %lld: %s", (long long)offset,
                   strerror(err));
  if (n < 0)
    n = 0;
  if ((size_t)n >= sizeof msg)
    n = sizeof msg - 1;
  return colioi_set_error(code, err, msg, (size_t)n);
}

/* Reads into buf; returns 1 with *rc set if it served the call, 0 if the
 * caller must take the Go path. */
int colioi_fast_read(uint64_t tok, void *buf, int64_t size, int64_t offset, int64_t *nread,
                     int *rc) {
  /* Bad arguments, a buffer that wraps the address space among them, go
   * to Go, whose checks (and messages) are the same for every path. */
  if (tok == 0 || size <= 0 || !buf || offset < 0 || offset > INT64_MAX - size ||
      (uint64_t)size > (uint64_t)(UINTPTR_MAX - (uintptr_t)buf) ||
      size > atomic_load_explicit(&threshold, memory_order_relaxed))
    return 0;
  struct fast_entry *e = entry(tok, 0);
  if (!e)
    return 0;
  atomic_fetch_add(&e->users, 1);
  if (atomic_load(&e->token) != tok) {
    atomic_fetch_sub(&e->users, 1);
    return 0;
  }
  int64_t now = atomic_fetch_add(&n_in_flight, 1) + 1;
  int64_t peak = atomic_load(&n_peak);
  while (now > peak && !atomic_compare_exchange_weak(&n_peak, &peak, now)) {
  }
  int64_t done = 0;
  int err = 0, past_end = 0;
  if (e->fd < 0) { /* memory */
    if (offset > e->mem_size)
      past_end = 1;
    else {
      done = e->mem_size - offset < size ? e->mem_size - offset : size;
      memcpy(buf, e->mem + offset, (size_t)done);
    }
  } else {
    while (done < size) {
      ssize_t r = pread(e->fd, (char *)buf + done, (size_t)(size - done), (off_t)(offset + done));
      if (r < 0 && errno == EINTR)
        continue;
      if (r < 0) {
        err = errno;
        break;
      }
      if (r == 0)
        break;
      done += r;
    }
    if (!err && done < size) { /* short: at the end, or past it? */
      struct stat st;
      if (fstat(e->fd, &st) != 0)
        err = errno;
      else if (offset > st.st_size)
        past_end = 1;
      else if (offset + done < st.st_size) {
        /* Short before the end: the file grew since the pread, or it
         * shrank and grew again. Go reads on to the end or reports the
         * source ending early, as on every other path. */
        atomic_fetch_sub(&n_in_flight, 1);
        atomic_fetch_sub(&e->users, 1);
        return 0;
      }
    }
  }
  atomic_fetch_sub(&n_in_flight, 1);
  atomic_fetch_sub(&e->users, 1);
  atomic_fetch_add(&n_ops, 1);
  atomic_fetch_add(&n_bytes, done);
  *nread = done;
  if (err)
    *rc = io_error(err, offset);
  else if (past_end) {
    atomic_fetch_add(&n_errors, 1);
    *nread = 0;
    *rc = colioi_fail(COLIO_EINVAL,
                      "colio_read: read at offset %lld starts past the end of the source",
                      (long long)offset);
  } else
    *rc = COLIO_OK;
  return 1;
}
