/*
 * fastpath.c: small synchronous reads of local files and memory, and small
 * synchronous writes to local files, in C.
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
 * Writes the same way (issue 15.3): colio_write and colio_write_ex of at
 * most small_write_threshold bytes to a file sink are a pwrite here (0.6 us
 * for 4 KiB, against 1.3 us through Go, measured from C). The sink's state
 * that both paths change lives in C memory that Go allocated and uses too:
 * the append reservation (next) and the highest end written (end), both
 * updated atomically. A write that fails is handed to Go at the offset it
 * took, which writes again, records the sticky error and words the message.
 *
 * Safety against colio_source_free and colio_sink_free: Go registers a
 * handle here after it made it, and unregisters it (waiting for callers in
 * this file to leave) before it closes the descriptor. A caller announces
 * itself in the entry's user count, then checks that the entry still
 * carries its token; unregistering clears the token, then waits for the
 * count to drop. With sequentially consistent atomics on both sides,
 * either the caller sees the cleared token and falls back to Go (which
 * reports the freed handle), or the unregistering side sees the caller and
 * waits for it. A descriptor is therefore never used after close, nor a
 * recycled one read or written.
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
  _Atomic uint64_t token; /* 0: no fast handle here */
  _Atomic int64_t users;
  int fd;                 /* -1 for a memory source */
  const char *mem;
  int64_t mem_size;
  _Atomic int64_t *next;  /* a file sink's append reservation (shared with Go) */
  _Atomic int64_t *end;   /* a file sink's highest end written (shared with Go) */
};

/* Chunks of entries, made on first use and never freed (at most a few
 * hundred KiB for a million live sources); untouched pointers cost no
 * resident memory. */
static _Atomic(struct fast_entry *) chunks[NCHUNKS];

static _Atomic int64_t threshold = -1;       /* -1 until Go sets it: no fast path */
static _Atomic int64_t write_threshold = -1; /* the same for writes */
static _Atomic int64_t n_ops, n_bytes, n_errors, n_in_flight, n_peak, n_wops, n_wbytes;

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

void colioi_fast_set_write_threshold(int64_t v) { atomic_store(&write_threshold, v); }

void colioi_fast_register(uint64_t tok, int fd, const void *mem, int64_t mem_size) {
  struct fast_entry *e = entry(tok, 1);
  if (!e)
    return; /* out of memory: that source simply takes the Go path */
  e->fd = fd;
  e->mem = (const char *)mem;
  e->mem_size = mem_size;
  e->next = e->end = NULL;
  atomic_store(&e->token, tok); /* publishes the fields above */
}

void colioi_fast_register_sink(uint64_t tok, int fd, int64_t *next, int64_t *end) {
  struct fast_entry *e = entry(tok, 1);
  if (!e)
    return; /* out of memory: that sink simply takes the Go path */
  e->fd = fd;
  e->mem = NULL;
  e->mem_size = 0;
  e->next = (_Atomic int64_t *)next;
  e->end = (_Atomic int64_t *)end;
  atomic_store(&e->token, tok);
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
  int64_t ops = atomic_load(&n_ops) + atomic_load(&n_wops);
  c->ops_submitted += ops;
  c->ops_inline += ops;
  c->bytes_read += atomic_load(&n_bytes);
  c->bytes_written += atomic_load(&n_wbytes);
  c->errors += atomic_load(&n_errors);
  c->in_flight += atomic_load(&n_in_flight);
  int64_t peak = atomic_load(&n_peak);
  if (peak > c->peak_in_flight)
    c->peak_in_flight = peak; /* the two paths' peaks are kept apart */
}

/* The registered entry of tok with this caller counted in its users, or
 * NULL (not registered, or being unregistered): see the comment at the top. */
static struct fast_entry *hold(uint64_t tok) {
  struct fast_entry *e = entry(tok, 0);
  if (!e)
    return NULL;
  atomic_fetch_add(&e->users, 1);
  if (atomic_load(&e->token) != tok) {
    atomic_fetch_sub(&e->users, 1);
    return NULL;
  }
  return e;
}

static void store_max(_Atomic int64_t *p, int64_t v) {
  int64_t cur = atomic_load(p);
  while (v > cur && !atomic_compare_exchange_weak(p, &cur, v)) {
  }
}

/* The counters of one call in progress (colio_stats' in_flight and peak). */
static void flight_begin(void) { store_max(&n_peak, atomic_fetch_add(&n_in_flight, 1) + 1); }

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
  struct fast_entry *e = hold(tok);
  if (!e)
    return 0;
  if (e->next != NULL) { /* a sink's token passed as a source: Go says so */
    atomic_fetch_sub(&e->users, 1);
    return 0;
  }
  flight_begin();
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

/* Writes size bytes of buf at offset (COLIO_APPEND: at the next reserved
 * offset) to a registered file sink; returns 1 with *nwritten, *placed and
 * *rc set if it served the call, 0 if the caller must take the Go path
 * (with *placed set to the offset to write at when it is not the one
 * asked: a failed append keeps the offset it reserved). */
int colioi_fast_write(uint64_t tok, const void *buf, int64_t size, int64_t *offset,
                      int64_t *nwritten, int64_t *placed) {
  int64_t off = *offset;
  if (tok == 0 || size <= 0 || !buf || (off != COLIO_APPEND && (off < 0 || off > INT64_MAX - size)) ||
      (uint64_t)size > (uint64_t)(UINTPTR_MAX - (uintptr_t)buf) ||
      size > atomic_load_explicit(&write_threshold, memory_order_relaxed))
    return 0;
  struct fast_entry *e = hold(tok);
  if (!e)
    return 0;
  if (e->next == NULL) { /* a source's token passed as a sink: Go says so */
    atomic_fetch_sub(&e->users, 1);
    return 0;
  }
  if (off == COLIO_APPEND) {
    off = atomic_fetch_add(e->next, size);
    if (off < 0 || off > INT64_MAX - size) { /* Go words the overflow */
      atomic_fetch_sub(&e->users, 1);
      *offset = off;
      return 0;
    }
  }
  flight_begin();
  int64_t done = 0;
  int failed = 0;
  while (done < size) {
    ssize_t w = pwrite(e->fd, (const char *)buf + done, (size_t)(size - done), (off_t)(off + done));
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0) {
      failed = 1;
      break;
    }
    done += w;
  }
  if (!failed)
    store_max(e->end, off + done);
  atomic_fetch_sub(&n_in_flight, 1);
  atomic_fetch_sub(&e->users, 1);
  if (failed) {
    /* Go writes it again at the same offset: the sticky error, the
     * message and the counters are its own. */
    *offset = off;
    return 0;
  }
  atomic_fetch_add(&n_wops, 1);
  atomic_fetch_add(&n_wbytes, done);
  *nwritten = done;
  *placed = off;
  return 1;
}
