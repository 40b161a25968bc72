/*
 * test_batch.c: one call per batch (issue 15). colio_readv (blocking) and
 * colio_readv_batch (one future for a whole fan-out, results in the
 * caller's arrays, entries in a completion queue) on random batches
 * (empty, one range, 10,000 ranges, ranges at and past the end) of a file
 * (compared with pread) and of a callback source (compared with the
 * generator's bytes), coalesced or not; failures per range, the lowest
 * index's as the batch's; per-range wait, cancel and error; completion
 * queues shared by batches, drained a few entries at a time, timing out,
 * and freed under a waiter; colio_write_ex's placed offset. These calls
 * did not exist before issue 15.
 */
#include "pattern.h"

#define MAXN 10000


/* Fails every read that touches [BAD, BAD + 1). */
#define BAD ((int64_t)500000)
static int64_t bad_read(void *ctx, void *buf, int64_t size, int64_t off) {
  if (off <= BAD && BAD < off + size)
    return -EPERM;
  return cb_read(ctx, buf, size, off);
}

/* Blocks the first read until the gate opens (serialised source: every
 * other range waits behind it, not started, so it can be cancelled). */
static volatile int gate_open, gate_entered;
static int64_t gated_read(void *ctx, void *buf, int64_t size, int64_t off) {
  __atomic_store_n(&gate_entered, 1, __ATOMIC_SEQ_CST);
  while (!__atomic_load_n(&gate_open, __ATOMIC_SEQ_CST))
    sleep_ns(1000000);
  return cb_read(ctx, buf, size, off);
}


static colio_range r[MAXN];
static int64_t nread[MAXN];
static int status[MAXN];
static unsigned char want[70001];

static int make_ranges(uint64_t *seed, int n) {
  for (int i = 0; i < n; i++) {
    int64_t off, len;
    switch (rnd(seed) % 4) {
    case 0: off = SIZE, len = (int64_t)(rnd(seed) % 10); break;       /* at the end */
    case 1: off = SIZE - (int64_t)(rnd(seed) % 100), len = 200; break; /* crosses it */
    case 2: off = (int64_t)(rnd(seed) % (uint64_t)SIZE), len = 0; break;
    default:
      off = (int64_t)(rnd(seed) % (uint64_t)SIZE), len = (int64_t)(rnd(seed) % (n > 100 ? 5000 : 70000));
      break;
    }
    r[i].offset = off;
    r[i].size = len;
    r[i].buf = xmalloc((size_t)len + 1);
    nread[i] = -7;
    status[i] = 7;
  }
  return n;
}

static void check_ranges(int n, int ref_fd) {
  for (int i = 0; i < n; i++) {
    int64_t exp = r[i].offset + r[i].size <= SIZE ? r[i].size : SIZE - r[i].offset;
    CHECK(status[i] == COLIO_OK);
    CHECK(nread[i] == exp);
    if (ref_fd >= 0)
      CHECK(pread_all(ref_fd, want, exp, r[i].offset) == exp);
    else
      memcpy(want, data + r[i].offset, (size_t)exp);
    if (nread[i] == exp && memcmp(r[i].buf, want, (size_t)exp) != 0) {
      fprintf(stderr, "range %d (%lld+%lld): wrong bytes\n", i, (long long)r[i].offset,
              (long long)r[i].size);
      t_failures++;
    }
    free(r[i].buf);
  }
}

/* One random batch of n ranges, read with colio_readv, or with
 * colio_readv_batch and collected from cq a few entries at a time. */
static void batch(colio_source *src, int ref_fd, uint64_t *seed, int n, uint32_t flags,
                  colio_cq *cq) {
  make_ranges(seed, n);
  if (!cq) {
    OK(colio_readv(src, r, n, flags, nread, status));
    check_ranges(n, ref_fd);
    return;
  }
  uint64_t ctx0 = rnd(seed) >> 8;
  colio_future *f = NULL;
  OK(colio_readv_batch(src, r, n, flags, nread, status, cq, ctx0, &f));
  char *seen = (char *)calloc((size_t)n + 1, 1);
  colio_cq_entry e[7];
  int got = 0;
  while (got < n) {
    int64_t k = 0;
    OK(colio_cq_wait(cq, e, 7, COLIO_WAIT_FOREVER, &k));
    CHECK(k >= 1 && k <= 7);
    for (int64_t j = 0; j < k; j++) {
      int64_t i = (int64_t)(e[j].ctx - ctx0);
      REQUIRE(i >= 0 && i < n && !seen[i]);
      seen[i] = 1;
      got++;
      CHECK(e[j].status == COLIO_OK);
      /* The arrays are written before the entry is posted. */
      CHECK(e[j].nbytes == nread[i] && status[i] == COLIO_OK);
    }
  }
  free(seen);
  int64_t total = -1, sum = 0;
  OK(colio_future_wait(f, COLIO_WAIT_FOREVER, &total));
  for (int i = 0; i < n; i++)
    sum += nread[i];
  CHECK(total == sum);
  int64_t k = 5;
  CHECK_RC(colio_cq_wait(cq, e, 7, 0, &k), COLIO_ETIMEDOUT); /* exactly n entries */
  CHECK(k == 0);
  OK(colio_future_free(f));
  check_ranges(n, ref_fd);
}

static void *wait_closed(void *arg) {
  colio_cq_entry e[1];
  int64_t k = 3;
  int rc = colio_cq_wait((colio_cq *)arg, e, 1, COLIO_WAIT_FOREVER, &k);
  return (void *)(intptr_t)(rc == COLIO_ECLOSED && k == 0);
}

int main(void) {
  watchdog(120);
  struct pattern P;
  pattern_open(&P, "batch", 15);
  colio_source *file = P.file, *cb = P.cb, *bad, *gated;
  int fd = P.fd;
  colio_source_callbacks c = {sizeof c, NULL, cb_read, NULL, COLIO_CALLBACK_CONCURRENT};
  c.read = bad_read;
  REQUIRE(colio_source_from_callbacks(&c, SIZE, &bad) == COLIO_OK);
  c.read = gated_read;
  c.flags = 0; /* serialised */
  REQUIRE(colio_source_from_callbacks(&c, SIZE, &gated) == COLIO_OK);
  colio_cq *cq = NULL;
  OK(colio_cq_new(&cq));
  REQUIRE(cq != NULL);

  /* Random batches: sizes 1, small, 10,000; both sources; flags 0 and
   * coalesced; blocking and through the queue. */
  uint64_t seed = 0x2545f4914f6cdd1dull;
  int sizes[] = {1, 2, 17, 300, MAXN};
  for (int s = 0; s < 5; s++)
    for (int rep = 0; rep < (sizes[s] == MAXN ? 1 : 6); rep++)
      for (uint32_t fl = 0; fl <= COLIO_READV_COALESCE; fl++) {
        batch(file, fd, &seed, sizes[s], fl, NULL);
        batch(file, fd, &seed, sizes[s], fl, cq);
        batch(cb, -1, &seed, sizes[s], fl, NULL);
        batch(cb, -1, &seed, sizes[s], fl, cq);
      }

  /* Empty batches. */
  OK(colio_readv(file, NULL, 0, 0, NULL, NULL));
  colio_future *f = NULL;
  OK(colio_readv_batch(file, NULL, 0, 0, NULL, NULL, cq, 1, &f));
  CHECK(colio_future_done(f) == 1);
  int64_t total = -1;
  OK(colio_future_wait(f, 0, &total));
  CHECK(total == 0);
  CHECK_ERR(colio_future_wait_part(f, 0, 0, NULL), COLIO_EINVAL, "out of range");
  OK(colio_future_free(f));
  colio_cq_entry e[16];
  int64_t k = 0;
  CHECK_RC(colio_cq_wait(cq, e, 16, 0, &k), COLIO_ETIMEDOUT);
  CHECK_RC(colio_cq_wait(cq, e, 16, 1000000, &k), COLIO_ETIMEDOUT); /* 1 ms */

  /* Checked first: a range past the end starts nothing, writes nothing. */
  make_ranges(&seed, 10);
  r[4].offset = SIZE + 1;
  CHECK_ERR(colio_readv(cb, r, 10, 0, nread, status), COLIO_EINVAL, "past the end");
  f = (colio_future *)1;
  CHECK_ERR(colio_readv_batch(cb, r, 10, 0, nread, status, cq, 0, &f), COLIO_EINVAL,
            "past the end");
  CHECK(f == NULL);
  for (int i = 0; i < 10; i++)
    CHECK(nread[i] == -7 && status[i] == 7);
  CHECK_ERR(colio_readv(cb, r, 10, 0x80, nread, status), COLIO_EINVAL, "flags");
  CHECK_ERR(colio_readv(cb, r, -1, 0, nread, status), COLIO_EINVAL, "negative");
  CHECK_ERR(colio_readv(cb, NULL, 3, 0, nread, status), COLIO_EINVAL, "NULL");
  CHECK_ERR(colio_readv(NULL, r, 10, 0, nread, status), COLIO_EINVAL, "colio_source");
  CHECK_ERR(colio_readv_batch(cb, r, 10, 0, nread, status, cq, 0, NULL), COLIO_EINVAL, "out");
  CHECK_ERR(colio_readv_batch(cb, r, 10, 0, nread, status, (colio_cq *)(uintptr_t)cb, 0, &f),
            COLIO_EINVAL, "colio_cq");
  for (int i = 0; i < 10; i++)
    free(r[i].buf);

  /* Failures belong to their ranges; the batch reports the lowest index's. */
  for (int i = 0; i < 4; i++) {
    r[i].offset = i == 0 ? 0 : BAD - 10 + i;
    r[i].size = 100;
    r[i].buf = xmalloc(100);
  }
  CHECK_RC(colio_readv(bad, r, 4, 0, nread, status), COLIO_ECALLBACK);
  CHECK(status[0] == COLIO_OK && nread[0] == 100 && memcmp(r[0].buf, data, 100) == 0);
  CHECK(status[1] == COLIO_ECALLBACK && status[2] == COLIO_ECALLBACK && status[3] == COLIO_ECALLBACK);
  OK(colio_readv_batch(bad, r, 4, 0, nread, status, NULL, 0, &f));
  CHECK_RC(colio_future_wait(f, COLIO_WAIT_FOREVER, NULL), COLIO_ECALLBACK);
  const char *msg = NULL;
  int en = 0;
  CHECK_RC(colio_future_error_part(f, 2, &msg, &en), COLIO_ECALLBACK);
  CHECK(en == EPERM && msg && strlen(msg) > 0);
  OK(colio_future_error_part(f, 0, &msg, &en));
  CHECK(msg && msg[0] == '\0');
  CHECK_RC(colio_future_wait_part(f, 1, 0, NULL), COLIO_ECALLBACK);
  total = -1;
  OK(colio_future_wait_part(f, 0, 0, &total));
  CHECK(total == 100);
  OK(colio_future_free(f));

  /* Per-range wait and cancel: range 0 blocks the serialised source, so
   * the others have not started. */
  for (int i = 0; i < 4; i++)
    r[i].offset = 1000 * (int64_t)i;
  OK(colio_readv_batch(gated, r, 4, 0, nread, status, cq, 100, &f));
  while (!__atomic_load_n(&gate_entered, __ATOMIC_SEQ_CST))
    sleep_ns(1000000);
  CHECK_RC(colio_future_wait_part(f, 1, 1000000, &total), COLIO_ETIMEDOUT);
  CHECK_RC(colio_future_wait(f, 0, NULL), COLIO_ETIMEDOUT);
  int cancelled = -1;
  OK(colio_future_cancel_part(f, 2, &cancelled));
  CHECK(cancelled == 1);
  cancelled = -1;
  OK(colio_future_cancel(f, &cancelled)); /* the whole batch: ranges 1 and 3 */
  CHECK(cancelled == 1);
  __atomic_store_n(&gate_open, 1, __ATOMIC_SEQ_CST);
  /* A cancelled range ends when its turn comes, without a read. */
  CHECK_RC(colio_future_wait_part(f, 2, COLIO_WAIT_FOREVER, NULL), COLIO_ECANCELLED);
  CHECK_RC(colio_future_wait(f, COLIO_WAIT_FOREVER, NULL), COLIO_ECANCELLED);
  CHECK(status[2] == COLIO_ECANCELLED);
  CHECK(status[0] == COLIO_OK && memcmp(r[0].buf, data, 100) == 0);
  CHECK(status[1] == COLIO_ECANCELLED && status[3] == COLIO_ECANCELLED);
  int seen = 0;
  while (seen < 4) {
    OK(colio_cq_wait(cq, e, 16, COLIO_WAIT_FOREVER, &k));
    for (int64_t j = 0; j < k; j++) {
      CHECK(e[j].ctx >= 100 && e[j].ctx < 104);
      CHECK(e[j].status == status[e[j].ctx - 100]);
    }
    seen += (int)k;
  }
  CHECK(seen == 4);
  OK(colio_future_free(f));
  for (int i = 0; i < 4; i++)
    free(r[i].buf);

  /* An ordinary future is not a batch. */
  unsigned char one[8];
  OK(colio_read_async(file, one, 8, 0, &f));
  CHECK_ERR(colio_future_wait_part(f, 0, 0, NULL), COLIO_EINVAL, "not a batch");
  CHECK_ERR(colio_future_cancel_part(f, 0, NULL), COLIO_EINVAL, "not a batch");
  OK(colio_future_free(f));

  /* Freeing the queue wakes its waiter with COLIO_ECLOSED. */
  pthread_t th;
  REQUIRE(pthread_create(&th, NULL, wait_closed, cq) == 0);
  sleep_ns(20000000);
  OK(colio_cq_free(cq));
  void *ok = NULL;
  pthread_join(th, &ok);
  CHECK(ok == (void *)1);
  CHECK_ERR(colio_cq_wait(cq, e, 1, 0, &k), COLIO_EINVAL, "freed");
  CHECK_ERR(colio_cq_free(cq), COLIO_EINVAL, "freed");
  OK(colio_cq_free(NULL));

  /* colio_write_ex says where an append went (small calls, issue 15.3). */
  char *wpath = temp_path("batch-write");
  colio_sink *snk = NULL;
  OK(colio_sink_open_file(wpath, COLIO_SINK_CREATE | COLIO_SINK_TRUNCATE, &snk));
  int64_t placed = -1, wrote = -1;
  OK(colio_write_ex(snk, data, 1000, COLIO_APPEND, &wrote, &placed));
  CHECK(wrote == 1000 && placed == 0);
  OK(colio_write_ex(snk, data + 1000, 300000, COLIO_APPEND, &wrote, &placed)); /* not inline */
  CHECK(wrote == 300000 && placed == 1000);
  OK(colio_write_ex(snk, data, 10, 5, NULL, &placed));
  CHECK(placed == 5);
  CHECK_ERR(colio_write_ex(snk, data, 10, -2, NULL, NULL), COLIO_EINVAL, "negative");
  OK(colio_sink_free(snk));
  int wfd = open(wpath, O_RDONLY);
  REQUIRE(wfd >= 0);
  unsigned char *back = (unsigned char *)xmalloc(301000);
  CHECK(pread_all(wfd, back, 301000, 0) == 301000);
  CHECK(memcmp(back, data, 5) == 0 && memcmp(back + 5, data, 10) == 0 &&
        memcmp(back + 15, data + 15, 301000 - 15) == 0);
  free(back);
  close(wfd);
  unlink(wpath);
  free(wpath);

  OK(colio_source_free(bad));
  OK(colio_source_free(gated));
  pattern_close(&P);
  return finish("test_batch");
}
