/*
 * stress.c: the long reliability run of colio's C ABI (`make stress`).
 *
 * 16 threads repeat, for about a million operations, every pattern the
 * short tests check once: sync, async and fan-out reads of file, memory
 * and callback sources; writes at offsets and appends to file sinks,
 * verified on disk with pread; sources closed under their own in-flight
 * reads and under other threads' submissions; callback reads that fail on
 * purpose (the error must reach exactly that future); cancel; handle
 * open/free cycles; read-ahead streams. Every byte is compared with the
 * generator's (fill_pattern) or with pread, never with colio's own output.
 *
 * A warm-up quarter runs first; then descriptors, threads, RSS and malloc'd
 * bytes are sampled with every worker parked, again after the main run,
 * and growth beyond a tolerance fails. Every wait has a timeout (a hang is
 * counted, never waited out) and a monitor exits the process if no
 * operation completes for HANG_S seconds.
 *
 * Usage: stress [scale]  (or STRESS_SCALE; 1.0 = 1.5 million operations).
 * The last line is machine-readable (STRESS-FIGURES ...) for run.py.
 */
#include "../c/harness.h"

#include <dirent.h>
#include <sched.h>
#include <sys/stat.h>

#define NTHREADS 16
#define BASE_OPS 1200000.0
#define DATA_SIZE ((int64_t)(8 << 20) - 777) /* odd: reads cross the end */
#define TASK_SIZE (64 << 10)                 /* so larger reads split into tasks */
#define BLOCK 4096                           /* fault injection granularity */
#define ARENA (6 << 20)                      /* per-thread read buffers */
#define GUARD 16
#define WAIT_NS ((int64_t)60 * 1000000000)   /* one wait longer than this is a hang */
#define HANG_S 120                           /* no progress this long: exit as hung */

/* Growth tolerated between the two samples. The Go runtime keeps its heap
 * and threads after warm-up; a real leak of even 16 bytes per operation
 * passes these by far over a million operations. */
#define TOL_FDS 2
#define TOL_THREADS 8
#define TOL_RSS ((int64_t)24 << 20)
#define TOL_HEAP ((int64_t)4 << 20)

static unsigned char *g_data; /* the reference bytes: file, memory and callbacks */
static char *g_path;
static colio_source *g_file, *g_mem, *g_cb, *g_fault;
static colio_source *g_slot; /* replaced under other threads' reads */

static int64_t g_ops, g_mismatch, g_hangs, g_faults, g_closed, g_cancelled, g_refused;
static int64_t g_progress;
static __thread int64_t t_ops; /* this thread's share of g_ops */
static pthread_barrier_t g_barrier;

#define ADD(var, n) __atomic_add_fetch(&(var), (n), __ATOMIC_RELAXED)
#define LOAD(var) __atomic_load_n(&(var), __ATOMIC_RELAXED)
/* One operation checked: its bytes, or its expected error. */
#define COUNT() (t_ops++, ADD(g_ops, 1))

static void mismatch(const char *what, int64_t off, int64_t size, int rc, int64_t n) {
  if (ADD(g_mismatch, 1) <= 20)
    fprintf(stderr, "MISMATCH %s: offset %lld size %lld: rc %d n %lld (%s)\n", what,
            (long long)off, (long long)size, rc, (long long)n, colio_last_error());
}

/* ---- random numbers (per thread, deterministic per seed) ----------------- */
typedef struct {
  uint64_t s;
} rng;

static uint64_t rnd(rng *r) {
  r->s ^= r->s << 13;
  r->s ^= r->s >> 7;
  r->s ^= r->s << 17;
  return r->s;
}

static int64_t rnd_in(rng *r, int64_t lo, int64_t hi) { /* [lo, hi] */
  return lo + (int64_t)(rnd(r) % (uint64_t)(hi - lo + 1));
}

/* A read size: mostly small (inline for fast sources), some that go to the
 * pool, a few that split into several tasks. */
static int64_t rnd_size(rng *r, int64_t max) {
  int64_t k = rnd_in(r, 0, 99), s;
  if (k < 60)
    s = rnd_in(r, 0, 4096);
  else if (k < 90)
    s = rnd_in(r, 4097, 160 << 10);
  else
    s = rnd_in(r, 160 << 10, 512 << 10);
  return s < max ? s : max;
}

static int64_t rnd_off(rng *r) {
  int64_t k = rnd_in(r, 0, 99);
  if (k < 3)
    return DATA_SIZE; /* at the end: 0 bytes */
  if (k < 10)
    return DATA_SIZE - rnd_in(r, 1, 8192); /* near it: short reads */
  return rnd_in(r, 0, DATA_SIZE - 1);
}

static int64_t expect_n(int64_t off, int64_t size) {
  int64_t left = DATA_SIZE - off;
  return size < left ? size : left;
}

/* ---- checks ---------------------------------------------------------------- */
static void guard_set(unsigned char *buf, int64_t size) { memset(buf + size, 0x5A, GUARD); }

/* A read of [off, off+size) into buf returned rc and n: right count, the
 * generator's bytes, nothing written past the buffer. */
static void check_read(const char *what, unsigned char *buf, int64_t off, int64_t size, int rc,
                       int64_t n) {
  int64_t want = expect_n(off, size);
  int bad = rc != COLIO_OK || n != want || memcmp(buf, g_data + off, (size_t)want) != 0;
  for (int i = 0; i < GUARD && !bad; i++)
    bad = buf[size + i] != 0x5A;
  if (bad)
    mismatch(what, off, size, rc, n);
  COUNT();
}

/* A wait with a hang limit. A future that never completes is counted and
 * left alone (freeing it would wait for it too). */
static int wait_fut(colio_future *f, int64_t *n, int *hung) {
  int rc = colio_future_wait(f, WAIT_NS, n);
  *hung = rc == COLIO_ETIMEDOUT;
  if (*hung && ADD(g_hangs, 1) <= 5)
    fprintf(stderr, "HANG: a future did not complete in %lld s\n",
            (long long)(WAIT_NS / 1000000000));
  return rc;
}

static void free_fut(colio_future *f, int hung) {
  if (!hung && colio_future_free(f) != COLIO_OK)
    mismatch("future_free", 0, 0, -1, 0);
}

/* ---- callback sources --------------------------------------------------------- */
typedef struct {
  int fault;      /* fail reads that start in a poisoned block */
  int64_t delay;  /* ns to sleep per read: keeps reads in flight */
} cb_ctx;

static int poisoned(int64_t off) {
  uint64_t b = (uint64_t)(off / BLOCK);
  return (b * 0x9E3779B97F4A7C15ull >> 60) % 5 == 0; /* about one block in five */
}

static int64_t cb_read(void *ctx, void *buf, int64_t size, int64_t offset) {
  cb_ctx *c = (cb_ctx *)ctx;
  if (c->delay)
    sleep_ns(c->delay);
  if (c->fault && poisoned(offset))
    return -EIO;
  if (offset >= DATA_SIZE)
    return 0;
  int64_t n = expect_n(offset, size);
  memcpy(buf, g_data + offset, (size_t)n);
  return n;
}

static cb_ctx ctx_plain = {0, 0}, ctx_fault = {1, 0}, ctx_slow = {0, 30000},
              ctx_race = {0, 20000};

static colio_source *cb_source(cb_ctx *ctx, uint32_t flags) {
  colio_source_callbacks cb;
  memset(&cb, 0, sizeof cb);
  cb.struct_size = sizeof cb;
  cb.ctx = ctx;
  cb.read = cb_read;
  cb.flags = flags;
  colio_source *s = NULL;
  REQUIRE(colio_source_from_callbacks(&cb, DATA_SIZE, &s) == COLIO_OK);
  return s;
}

/* ---- the rounds ---------------------------------------------------------- */
typedef struct {
  int id;
  rng r;
  unsigned char *arena;
  char *wpath;         /* this thread's sink file */
  unsigned char *img;  /* what the sink file must hold */
  unsigned char *disk; /* what pread found there */
  int64_t quota;
  int done_calls;      /* completion callbacks run (atomic) */
  int want_calls;      /* completion callbacks registered */
} worker;

static colio_source *pick(worker *w) {
  switch (rnd(&w->r) % 3) {
  case 0: return g_file;
  case 1: return g_mem;
  default: return g_cb;
  }
}

static void on_done(void *ctx, colio_future *f, int status, int64_t n) {
  (void)f;
  (void)status;
  (void)n;
  __atomic_add_fetch((int *)ctx, 1, __ATOMIC_SEQ_CST);
}

static void round_sync(worker *w) {
  for (int i = 0; i < 8; i++) {
    int64_t off = rnd_off(&w->r), size = rnd_size(&w->r, ARENA - GUARD), n = -1;
    guard_set(w->arena, size);
    int rc = colio_read(pick(w), w->arena, size, off, &n);
    check_read("sync read", w->arena, off, size, rc, n);
  }
}

static void round_async(worker *w) {
  enum { K = 16 };
  colio_future *f[K];
  int64_t off[K], size[K], pos[K], at = 0;
  int cbs = 0;
  for (int i = 0; i < K; i++) {
    off[i] = rnd_off(&w->r);
    size[i] = rnd_size(&w->r, 256 << 10);
    pos[i] = at;
    at += size[i] + GUARD;
    guard_set(w->arena + pos[i], size[i]);
    int rc = colio_read_async(pick(w), w->arena + pos[i], size[i], off[i], &f[i]);
    if (rc != COLIO_OK) {
      mismatch("read_async submit", off[i], size[i], rc, 0);
      f[i] = NULL;
      continue;
    }
    if (i % 2 == 0 && colio_future_on_done(f[i], on_done, &w->done_calls) == COLIO_OK)
      cbs++;
  }
  for (int j = 0; j < K; j++) {
    int i = (j * 7) % K; /* not in submission order */
    if (!f[i])
      continue;
    int64_t n = -1;
    int hung;
    int rc = wait_fut(f[i], &n, &hung);
    check_read("read_async", w->arena + pos[i], off[i], size[i], rc, n);
    free_fut(f[i], hung);
  }
  w->want_calls += cbs;
}

static void round_readv(worker *w, colio_source *src, const char *what) {
  enum { K = 48 };
  colio_range rg[K];
  colio_future *f[K];
  int64_t at = 0;
  for (int i = 0; i < K; i++) {
    rg[i].offset = rnd_off(&w->r);
    rg[i].size = rnd_size(&w->r, 32 << 10);
    rg[i].buf = w->arena + at;
    guard_set(w->arena + at, rg[i].size);
    at += rg[i].size + GUARD;
  }
  int rc = colio_readv_async(src, rg, K, f);
  if (rc != COLIO_OK) {
    mismatch(what, 0, K, rc, 0);
    return;
  }
  for (int j = K - 1; j >= 0; j--) {
    int64_t n = -1;
    int hung;
    rc = wait_fut(f[j], &n, &hung);
    check_read(what, (unsigned char *)rg[j].buf, rg[j].offset, rg[j].size, rc, n);
    free_fut(f[j], hung);
  }
}

/* Ranges inside distinct 4 KiB blocks of the faulty source: those that
 * start in a poisoned block must fail with the callback's error, and only
 * they. */
static void round_fault(worker *w) {
  enum { K = 32 };
  colio_range rg[K];
  colio_future *f[K];
  int64_t at = 0, nblocks = DATA_SIZE / BLOCK;
  for (int i = 0; i < K; i++) {
    int64_t b = rnd_in(&w->r, 0, nblocks - 1), in = rnd_in(&w->r, 0, BLOCK - 1);
    rg[i].offset = b * BLOCK + in;
    rg[i].size = rnd_in(&w->r, 1, BLOCK - in);
    rg[i].buf = w->arena + at;
    guard_set(w->arena + at, rg[i].size);
    at += rg[i].size + GUARD;
  }
  int rc = colio_readv_async(g_fault, rg, K, f);
  if (rc != COLIO_OK) {
    mismatch("fault readv submit", 0, K, rc, 0);
    return;
  }
  for (int i = 0; i < K; i++) {
    int64_t n = -1;
    int hung;
    rc = wait_fut(f[i], &n, &hung);
    if (hung)
      continue;
    if (poisoned(rg[i].offset)) {
      int errnum = 0;
      const char *msg = NULL;
      int st = colio_future_error(f[i], &msg, &errnum);
      if (rc != COLIO_ECALLBACK || st != COLIO_ECALLBACK || errnum != EIO || !msg || !msg[0])
        mismatch("fault: the error did not reach its future", rg[i].offset, rg[i].size, rc, n);
      else
        ADD(g_faults, 1);
      COUNT();
    } else {
      check_read("fault: a healthy range", (unsigned char *)rg[i].buf, rg[i].offset,
                 rg[i].size, rc, n);
    }
    free_fut(f[i], hung);
  }
}

/* A source freed with its own reads in flight: each read completes with
 * the right bytes or fails with COLIO_ECLOSED; none hangs. */
static void round_close(worker *w) {
  enum { K = 32 };
  int file = rnd(&w->r) % 2;
  colio_source *src = NULL;
  if (file)
    REQUIRE(colio_source_open_file(g_path, &src) == COLIO_OK);
  else
    src = cb_source(&ctx_race, COLIO_CALLBACK_CONCURRENT);
  colio_future *f[K];
  int64_t off[K], size[K], pos[K], at = 0;
  for (int i = 0; i < K; i++) {
    off[i] = rnd_in(&w->r, 0, DATA_SIZE - 1);
    size[i] = rnd_in(&w->r, file ? (129 << 10) : 1, file ? (160 << 10) : (48 << 10));
    pos[i] = at;
    at += size[i] + GUARD;
    guard_set(w->arena + pos[i], size[i]);
    int rc = colio_read_async(src, w->arena + pos[i], size[i], off[i], &f[i]);
    if (rc != COLIO_OK) {
      mismatch("close race submit", off[i], size[i], rc, 0);
      f[i] = NULL;
    }
  }
  if (colio_source_free(src) != COLIO_OK)
    mismatch("close race: source_free", 0, 0, -1, 0);
  for (int i = 0; i < K; i++) {
    if (!f[i])
      continue;
    int64_t n = -1;
    int hung;
    int rc = wait_fut(f[i], &n, &hung);
    if (rc == COLIO_ECLOSED) {
      ADD(g_closed, 1);
      COUNT();
    } else if (!hung) {
      check_read("close race", w->arena + pos[i], off[i], size[i], rc, n);
    }
    free_fut(f[i], hung);
  }
}

/* One shared memory source that any thread may replace (and free) while
 * others submit to it: a submission to the freed handle is refused with
 * COLIO_EINVAL or COLIO_ECLOSED, an accepted read completes with the
 * right bytes or COLIO_ECLOSED. */
static void round_slot(worker *w) {
  if (rnd(&w->r) % 4 == 0) {
    colio_source *fresh = NULL;
    REQUIRE(colio_source_from_memory(g_data, DATA_SIZE, &fresh) == COLIO_OK);
    colio_source *old = __atomic_exchange_n(&g_slot, fresh, __ATOMIC_SEQ_CST);
    if (colio_source_free(old) != COLIO_OK)
      mismatch("slot: source_free", 0, 0, -1, 0);
    return;
  }
  enum { K = 16 };
  colio_range rg[K];
  colio_future *f[K];
  int64_t at = 0;
  for (int i = 0; i < K; i++) {
    rg[i].offset = rnd_in(&w->r, 0, DATA_SIZE - 1);
    rg[i].size = rnd_in(&w->r, 1, 200 << 10);
    rg[i].buf = w->arena + at;
    guard_set(w->arena + at, rg[i].size);
    at += rg[i].size + GUARD;
  }
  colio_source *s = __atomic_load_n(&g_slot, __ATOMIC_SEQ_CST);
  int rc = colio_readv_async(s, rg, K, f);
  if (rc != COLIO_OK) {
    if (rc != COLIO_EINVAL && rc != COLIO_ECLOSED)
      mismatch("slot: submit to a replaced source", 0, K, rc, 0);
    ADD(g_refused, 1);
    COUNT();
    return;
  }
  for (int i = 0; i < K; i++) {
    int64_t n = -1;
    int hung;
    rc = wait_fut(f[i], &n, &hung);
    if (rc == COLIO_ECLOSED) {
      ADD(g_closed, 1);
      COUNT();
    } else if (!hung) {
      check_read("slot read", (unsigned char *)rg[i].buf, rg[i].offset, rg[i].size, rc, n);
    }
    free_fut(f[i], hung);
  }
}

/* Reads queued behind a slow serial callback, most of them cancelled: a
 * cancel that reports success ends the future with COLIO_ECANCELLED and
 * leaves its buffer alone; one that reports "already started" ends it
 * with the right bytes. */
static void round_cancel(worker *w) {
  enum { K = 24 };
  colio_source *src = cb_source(&ctx_slow, 0);
  colio_future *f[K];
  int64_t off[K], size = 2048;
  for (int i = 0; i < K; i++) {
    off[i] = rnd_in(&w->r, 0, DATA_SIZE - size);
    memset(w->arena + i * (size + GUARD), 0x5A, (size_t)(size + GUARD));
    if (colio_read_async(src, w->arena + i * (size + GUARD), size, off[i], &f[i]) != COLIO_OK) {
      mismatch("cancel submit", off[i], size, -1, 0);
      f[i] = NULL;
    }
  }
  int cancelled[K];
  for (int i = 0; i < K; i++) {
    cancelled[i] = 0;
    if (f[i] && i >= 4 && colio_future_cancel(f[i], &cancelled[i]) != COLIO_OK)
      mismatch("cancel", off[i], size, -1, 0);
  }
  for (int i = 0; i < K; i++) {
    if (!f[i])
      continue;
    unsigned char *buf = w->arena + i * (size + GUARD);
    int64_t n = -1;
    int hung;
    int rc = wait_fut(f[i], &n, &hung);
    if (hung)
      continue;
    if (cancelled[i]) {
      int bad = rc != COLIO_ECANCELLED;
      for (int64_t k = 0; k < size + GUARD && !bad; k++)
        bad = buf[k] != 0x5A; /* a cancelled read never touched its buffer */
      if (bad)
        mismatch("cancelled read", off[i], size, rc, n);
      else
        ADD(g_cancelled, 1);
      COUNT();
    } else {
      check_read("read that cancel found started", buf, off[i], size, rc, n);
    }
    free_fut(f[i], hung);
  }
  if (colio_source_free(src) != COLIO_OK)
    mismatch("cancel: source_free", 0, 0, -1, 0);
}

/* Handles made and freed: file source, memory source with a completion
 * callback, memory and void sinks. */
static void round_cycle(worker *w) {
  colio_source *s = NULL;
  int64_t off = rnd_in(&w->r, 0, DATA_SIZE - 1), size = rnd_in(&w->r, 1, 8192), n = -1;
  REQUIRE(colio_source_open_file(g_path, &s) == COLIO_OK);
  guard_set(w->arena, size);
  int rc = colio_read(s, w->arena, size, off, &n);
  check_read("cycle: file", w->arena, off, size, rc, n);
  if (colio_source_free(s) != COLIO_OK)
    mismatch("cycle: file free", 0, 0, -1, 0);

  REQUIRE(colio_source_from_memory(g_data, DATA_SIZE, &s) == COLIO_OK);
  colio_future *f = NULL;
  int before = __atomic_load_n(&w->done_calls, __ATOMIC_SEQ_CST);
  guard_set(w->arena, size);
  REQUIRE(colio_read_async(s, w->arena, size, off, &f) == COLIO_OK);
  REQUIRE(colio_future_on_done(f, on_done, &w->done_calls) == COLIO_OK);
  w->want_calls++;
  int hung;
  rc = wait_fut(f, &n, &hung);
  check_read("cycle: memory", w->arena, off, size, rc, n);
  free_fut(f, hung);
  /* free waits for the completion callback: it has run by now */
  if (!hung && __atomic_load_n(&w->done_calls, __ATOMIC_SEQ_CST) != before + 1)
    mismatch("cycle: completion callback not run by future_free", off, size, rc, n);
  if (colio_source_free(s) != COLIO_OK)
    mismatch("cycle: memory free", 0, 0, -1, 0);

  colio_sink *k = NULL;
  unsigned char *out = w->disk;
  size = expect_n(off, size); /* the bytes written come from g_data: stay inside it */
  REQUIRE(colio_sink_from_memory(out, size, &k) == COLIO_OK);
  rc = colio_write(k, g_data + off, size, 0, &n);
  int bad = rc != COLIO_OK || n != size || memcmp(out, g_data + off, (size_t)size) != 0;
  if (colio_sink_free(k) != COLIO_OK || bad)
    mismatch("cycle: memory sink", off, size, rc, n);
  COUNT();
  REQUIRE(colio_sink_void(&k) == COLIO_OK);
  rc = colio_write(k, g_data, size, COLIO_APPEND, &n);
  if (colio_sink_free(k) != COLIO_OK || rc != COLIO_OK || n != size)
    mismatch("cycle: void sink", 0, size, rc, n);
  COUNT();
}

/* A file sink: chunks written at shuffled explicit offsets (writev and
 * write_async, some synchronous), then, reopened for appending, chunks
 * appended (their offsets reserved in call order); the file on disk must
 * be the image, byte for byte. */
#define WCHUNKS 16
#define WMAX (48 << 10)
static void round_write(worker *w, uint64_t seed) {
  int64_t sz[2 * WCHUNKS], at[2 * WCHUNKS], total = 0;
  for (int i = 0; i < 2 * WCHUNKS; i++) {
    sz[i] = rnd_in(&w->r, 1, WMAX);
    at[i] = total;
    total += sz[i];
  }
  fill_pattern(w->img, total, seed);
  colio_sink *k = NULL;
  REQUIRE(colio_sink_open_file(w->wpath, COLIO_SINK_CREATE | COLIO_SINK_TRUNCATE, &k) == COLIO_OK);
  int order[WCHUNKS];
  for (int i = 0; i < WCHUNKS; i++)
    order[i] = i;
  for (int i = WCHUNKS - 1; i > 0; i--) {
    int j = (int)(rnd(&w->r) % (uint64_t)(i + 1)), t = order[i];
    order[i] = order[j];
    order[j] = t;
  }
  colio_range rg[WCHUNKS];
  colio_future *f[2 * WCHUNKS];
  int nv = WCHUNKS / 2;
  for (int i = 0; i < nv; i++) {
    rg[i].offset = at[order[i]];
    rg[i].size = sz[order[i]];
    rg[i].buf = w->img + at[order[i]];
  }
  int rc = colio_writev_async(k, rg, nv, f);
  if (rc != COLIO_OK) {
    mismatch("writev submit", 0, nv, rc, 0);
    nv = 0;
  }
  int nf = nv;
  for (int i = WCHUNKS / 2; i < WCHUNKS; i++) {
    int c = order[i];
    if (i % 4 == 0) {
      int64_t n = -1;
      rc = colio_write(k, w->img + at[c], sz[c], at[c], &n);
      if (rc != COLIO_OK || n != sz[c])
        mismatch("write", at[c], sz[c], rc, n);
      COUNT();
    } else if (colio_write_async(k, w->img + at[c], sz[c], at[c], &f[nf]) == COLIO_OK) {
      nf++;
    } else {
      mismatch("write_async submit", at[c], sz[c], -1, 0);
    }
  }
  /* Half the futures waited, the rest left to sink_free, which waits for
   * every accepted write. */
  for (int i = 0; i < nf; i++) {
    int64_t n = -1;
    int hung = 0;
    if (i % 2 == 0) {
      rc = wait_fut(f[i], &n, &hung);
      if (!hung && (rc != COLIO_OK || n <= 0))
        mismatch("write_async", 0, 0, rc, n);
    }
    COUNT();
    free_fut(f[i], hung);
  }
  if ((rc = colio_sink_free(k)) != COLIO_OK)
    mismatch("write: sink_free", 0, 0, rc, 0);

  REQUIRE(colio_sink_open_file(w->wpath, COLIO_SINK_APPEND, &k) == COLIO_OK);
  nf = 0;
  for (int i = WCHUNKS; i < 2 * WCHUNKS; i++) {
    if (i % 5 == 0 && i + 1 < 2 * WCHUNKS) { /* two appends in one call, in array order */
      colio_range two[2];
      for (int j = 0; j < 2; j++) {
        two[j].offset = COLIO_APPEND;
        two[j].size = sz[i + j];
        two[j].buf = w->img + at[i + j];
      }
      if (colio_writev_async(k, two, 2, &f[nf]) != COLIO_OK) {
        mismatch("append writev submit", at[i], sz[i], -1, 0);
        continue;
      }
      nf += 2;
      i++;
    } else if (colio_write_async(k, w->img + at[i], sz[i], COLIO_APPEND, &f[nf]) == COLIO_OK) {
      nf++;
    } else {
      mismatch("append submit", at[i], sz[i], -1, 0);
    }
  }
  for (int i = 0; i < nf; i++) {
    int64_t where = -1, n = -1;
    int hung;
    if (colio_future_offset(f[i], &where) != COLIO_OK || where != at[WCHUNKS + i])
      mismatch("append offset not in call order", at[WCHUNKS + i], sz[WCHUNKS + i], 0, where);
    rc = wait_fut(f[i], &n, &hung);
    if (!hung && (rc != COLIO_OK || n != sz[WCHUNKS + i]))
      mismatch("append", at[WCHUNKS + i], sz[WCHUNKS + i], rc, n);
    COUNT();
    free_fut(f[i], hung);
  }
  if ((rc = colio_sink_free(k)) != COLIO_OK)
    mismatch("append: sink_free", 0, 0, rc, 0);

  int fd = open(w->wpath, O_RDONLY);
  REQUIRE(fd >= 0);
  struct stat st;
  REQUIRE(fstat(fd, &st) == 0);
  int64_t got = pread_all(fd, w->disk, total + 1, 0);
  close(fd);
  if (st.st_size != total || got != total || memcmp(w->disk, w->img, (size_t)total) != 0)
    mismatch("write: the file on disk is not the image", 0, total, 0, got);
}

/* A read-ahead stream over the file, read through in random chunk sizes
 * from a random start. */
static void round_stream(worker *w) {
  colio_stream *st = NULL;
  int64_t pos = rnd_in(&w->r, 0, DATA_SIZE - 1), end = pos + rnd_in(&w->r, 1, 1 << 20);
  if (end > DATA_SIZE)
    end = DATA_SIZE;
  REQUIRE(colio_stream_open(g_file, pos, 64 << 10, 3, &st) == COLIO_OK);
  while (pos < end) {
    int64_t want = rnd_in(&w->r, 1, 100000), n = -1;
    if (want > end - pos)
      want = end - pos;
    int rc = colio_stream_read(st, w->arena, want, &n);
    if (rc != COLIO_OK || n <= 0 || n > want || memcmp(w->arena, g_data + pos, (size_t)n) != 0) {
      mismatch("stream read", pos, want, rc, n);
      break;
    }
    pos += n;
    COUNT();
  }
  if (colio_stream_free(st) != COLIO_OK)
    mismatch("stream free", 0, 0, -1, 0);
}

static void run_ops(worker *w, int64_t quota) {
  int64_t end = t_ops + quota, round = 0;
  while (t_ops < end) {
    int k = (int)(rnd(&w->r) % 100);
    if (k < 15) {
      round_sync(w);
    } else if (k < 30) {
      round_async(w);
    } else if (k < 50) {
      colio_source *s = pick(w);
      round_readv(w, s, s == g_file ? "readv file" : s == g_mem ? "readv memory" : "readv callback");
    } else if (k < 60) {
      round_fault(w);
    } else if (k < 68) {
      round_close(w);
    } else if (k < 78) {
      round_slot(w);
    } else if (k < 82) {
      round_cancel(w);
    } else if (k < 90) {
      round_cycle(w);
    } else if (k < 96) {
      round_write(w, ((uint64_t)w->id << 40) + (uint64_t)round + (uint64_t)t_ops);
    } else {
      round_stream(w);
    }
    round++;
    ADD(g_progress, 1);
  }
}

static void *worker_main(void *arg) {
  worker *w = (worker *)arg;
  run_ops(w, w->quota / 4); /* warm-up: pools, arenas and Go's heap reach their size */
  pthread_barrier_wait(&g_barrier);
  pthread_barrier_wait(&g_barrier); /* main samples between these two */
  run_ops(w, w->quota);
  pthread_barrier_wait(&g_barrier);
  pthread_barrier_wait(&g_barrier);
  return NULL;
}

/* ---- what the process holds --------------------------------------------------- */
static int count_fds(void) {
  DIR *d = opendir("/proc/self/fd");
  REQUIRE(d != NULL);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL)
    if (e->d_name[0] != '.')
      n++;
  closedir(d);
  return n - 1; /* opendir's own */
}

static int count_threads(void) {
  FILE *f = fopen("/proc/self/status", "r");
  REQUIRE(f != NULL);
  char line[256];
  int n = -1;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "Threads: %d", &n) == 1)
      break;
  fclose(f);
  return n;
}

typedef struct {
  int fds, threads;
  int64_t rss, heap;
} sample;

static sample take_sample(void) {
  sleep_ns(300 * 1000000); /* lets the notifier and Go's background work settle */
  sample s;
  s.fds = count_fds();
  s.threads = count_threads();
  s.heap = heap_bytes();
  s.rss = rss_bytes();
  return s;
}

/* ---- the hang monitor ------------------------------------------------------------ */
static sample g_s0;
static int g_have_s0;

static void *monitor(void *arg) {
  (void)arg;
  int64_t last = -1;
  int still = 0;
  for (;;) {
    sleep_ns(1000000000);
    int64_t p = LOAD(g_progress);
    still = p == last ? still + 1 : 0;
    last = p;
    if (still >= HANG_S) {
      fprintf(stderr, "HANG: no round finished for %d s\n", HANG_S);
      printf("STRESS-FIGURES lang=c ops=%lld mismatches=%lld hangs=%lld fds0=%d fds1=-1 "
             "threads0=%d threads1=-1 rss0=%lld rss1=-1 ok=0\n",
             (long long)LOAD(g_ops), (long long)LOAD(g_mismatch), (long long)LOAD(g_hangs) + 1,
             g_have_s0 ? g_s0.fds : -1, g_have_s0 ? g_s0.threads : -1,
             (long long)(g_have_s0 ? g_s0.rss : -1));
      fflush(stdout);
      _exit(3);
    }
  }
  return NULL;
}

int main(int argc, char **argv) {
  double scale = 1.0;
  const char *env = getenv("STRESS_SCALE");
  if (argc > 1)
    scale = atof(argv[1]);
  else if (env && *env)
    scale = atof(env);
  REQUIRE(scale > 0);
  setvbuf(stdout, NULL, _IOLBF, 0);

  g_data = (unsigned char *)xmalloc((size_t)DATA_SIZE);
  fill_pattern(g_data, DATA_SIZE, 8);
  g_path = temp_path("stress-src");
  write_file(g_path, g_data, (size_t)DATA_SIZE);
  REQUIRE(colio_config_set_int("task_size", TASK_SIZE) == COLIO_OK);
  REQUIRE(colio_source_open_file(g_path, &g_file) == COLIO_OK);
  REQUIRE(colio_source_from_memory(g_data, DATA_SIZE, &g_mem) == COLIO_OK);
  g_cb = cb_source(&ctx_plain, COLIO_CALLBACK_CONCURRENT | COLIO_CALLBACK_FAST);
  g_fault = cb_source(&ctx_fault, COLIO_CALLBACK_CONCURRENT);
  REQUIRE(colio_source_from_memory(g_data, DATA_SIZE, &g_slot) == COLIO_OK);

  int64_t total = (int64_t)(BASE_OPS * scale);
  worker ws[NTHREADS];
  pthread_t th[NTHREADS], mon;
  REQUIRE(pthread_barrier_init(&g_barrier, NULL, NTHREADS + 1) == 0);
  REQUIRE(pthread_create(&mon, NULL, monitor, NULL) == 0);
  int64_t t0 = now_ns();
  for (int i = 0; i < NTHREADS; i++) {
    worker *w = &ws[i];
    memset(w, 0, sizeof *w);
    w->id = i;
    w->r.s = 0x1234567ull * (uint64_t)(i + 1) + 99;
    w->arena = (unsigned char *)xmalloc(ARENA);
    w->img = (unsigned char *)xmalloc(2 * WCHUNKS * WMAX);
    w->disk = (unsigned char *)xmalloc(2 * WCHUNKS * WMAX + 1);
    /* touched now, so that the RSS samples do not see them fault in */
    memset(w->arena, 1, ARENA); /* not 0: malloc+memset(0) may become calloc */
    memset(w->img, 1, 2 * WCHUNKS * WMAX);
    memset(w->disk, 1, 2 * WCHUNKS * WMAX + 1);
    w->wpath = temp_path("stress-sink");
    w->quota = total / NTHREADS;
    REQUIRE(pthread_create(&th[i], NULL, worker_main, w) == 0);
  }
  pthread_barrier_wait(&g_barrier);
  int64_t warm_ops = LOAD(g_ops);
  g_s0 = take_sample();
  g_have_s0 = 1;
  pthread_barrier_wait(&g_barrier);
  int64_t t1 = now_ns();
  pthread_barrier_wait(&g_barrier);
  int64_t t2 = now_ns();
  sample s1 = take_sample();
  pthread_barrier_wait(&g_barrier);
  for (int i = 0; i < NTHREADS; i++)
    pthread_join(th[i], NULL);

  for (int i = 0; i < NTHREADS; i++) /* every registered completion callback ran once */
    if (__atomic_load_n(&ws[i].done_calls, __ATOMIC_SEQ_CST) != ws[i].want_calls)
      mismatch("completion callbacks run != registered", i, ws[i].want_calls, 0,
               ws[i].done_calls);
  int64_t ops = LOAD(g_ops), mism = LOAD(g_mismatch), hangs = LOAD(g_hangs);
  int64_t measured = ops - warm_ops;
  int grow_ok = s1.fds - g_s0.fds <= TOL_FDS && s1.threads - g_s0.threads <= TOL_THREADS &&
                s1.rss - g_s0.rss <= TOL_RSS && s1.heap - g_s0.heap <= TOL_HEAP;
  int ok = mism == 0 && hangs == 0 && grow_ok;

  colio_source_free(g_file);
  colio_source_free(g_mem);
  colio_source_free(g_cb);
  colio_source_free(g_fault);
  colio_source_free(g_slot);
  for (int i = 0; i < NTHREADS; i++) {
    unlink(ws[i].wpath);
    free(ws[i].wpath);
    free(ws[i].arena);
    free(ws[i].img);
    free(ws[i].disk);
  }
  unlink(g_path);

  printf("stress c: %lld operations from %d threads in %.1f s (%lld after warm-up, %.0f/s)\n",
         (long long)ops, NTHREADS, (t2 - t0) / 1e9, (long long)measured,
         measured / ((t2 - t1) / 1e9));
  printf("stress c: mismatches %lld, hangs %lld; faults delivered %lld, closed %lld, "
         "cancelled %lld, refused after replace %lld\n",
         (long long)mism, (long long)hangs, (long long)LOAD(g_faults), (long long)LOAD(g_closed),
         (long long)LOAD(g_cancelled), (long long)LOAD(g_refused));
  printf("stress c: fds %d -> %d (tolerance +%d), threads %d -> %d (+%d), RSS %.1f -> %.1f MiB "
         "(%+.1f, +%lld), malloc'd %+.2f MiB (+%lld)\n",
         g_s0.fds, s1.fds, TOL_FDS, g_s0.threads, s1.threads, TOL_THREADS, g_s0.rss / 1048576.0,
         s1.rss / 1048576.0, (s1.rss - g_s0.rss) / 1048576.0, (long long)(TOL_RSS >> 20),
         (s1.heap - g_s0.heap) / 1048576.0, (long long)(TOL_HEAP >> 20));
  printf("STRESS-FIGURES lang=c ops=%lld mismatches=%lld hangs=%lld fds0=%d fds1=%d threads0=%d "
         "threads1=%d rss0=%lld rss1=%lld ok=%d\n",
         (long long)ops, (long long)mism, (long long)hangs, g_s0.fds, s1.fds, g_s0.threads,
         s1.threads, (long long)g_s0.rss, (long long)s1.rss, ok);
  return ok ? 0 : 1;
}
