/*
 * test_work.c: queued sources whose parts the caller's own threads run
 * (colio_source_from_queue, colio_work_take/done/next; issue 15.2): bytes
 * against the generator, the python_workers bound, cancel of an untaken
 * part, free failing untaken parts with COLIO_ECLOSED, a nested wait that
 * frees a worker's place, ECLOSED once no queued source is open.
 */
#include "harness.h"

#define SIZE (1 << 20)
static unsigned char ref[SIZE];

static unsigned char gen(int64_t off) { return (unsigned char)((off * 131 + 7) >> 3); }

static volatile int hold_zero; /* the part at offset 0 waits while set */
static volatile int running, peak, stop_workers;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static colio_source *inner; /* read by a nested callback when set */

static int64_t run_part(const colio_work *w) {
  pthread_mutex_lock(&mu);
  if (++running > peak)
    peak = running;
  pthread_mutex_unlock(&mu);
  while (hold_zero && w->offset == 0)
    sleep_ns(1000000);
  if (inner && w->ctx == (void *)2) {
    /* Nested: read the other queued source and wait on it. */
    colio_future *f = NULL;
    int64_t n = 0;
    if (colio_read_async(inner, w->buf, w->size, w->offset, &f) != COLIO_OK ||
        colio_future_wait(f, COLIO_WAIT_FOREVER, &n) != COLIO_OK)
      n = -EIO;
    colio_future_free(f);
    pthread_mutex_lock(&mu);
    running--;
    pthread_mutex_unlock(&mu);
    return n;
  }
  memcpy(w->buf, ref + w->offset, (size_t)w->size);
  sleep_ns(200000);
  pthread_mutex_lock(&mu);
  running--;
  pthread_mutex_unlock(&mu);
  return w->size;
}

static void *worker(void *arg) {
  (void)arg;
  colio_work w;
  int64_t tok = 0, res = 0;
  for (;;) {
    int rc = colio_work_next(tok, res, 20000000, &w);
    tok = 0;
    if (rc == COLIO_OK) {
      res = run_part(&w);
      tok = w.token;
      continue;
    }
    if (rc == COLIO_ECLOSED || stop_workers)
      return NULL;
  }
}

static int check_bytes(const unsigned char *b, int64_t off, int64_t n) {
  return memcmp(b, ref + off, (size_t)n) == 0;
}

int main(void) {
  for (int64_t i = 0; i < SIZE; i++)
    ref[i] = gen(i);
  OK(colio_config_set_int("python_workers", 3));
  OK(colio_config_set_int("task_size", 100000));

  colio_source *src = NULL;
  OK(colio_source_from_queue(SIZE, COLIO_CALLBACK_CONCURRENT, (void *)1, &src));
  REQUIRE(src);
  colio_source *bad = NULL;
  CHECK_ERR(colio_source_from_queue(-1, 0, NULL, &bad), COLIO_EINVAL, "negative");
  CHECK_ERR(colio_source_from_queue(1, 8, NULL, &bad), COLIO_EINVAL, "flags");
  CHECK_ERR(colio_work_done(987654, 1), COLIO_EINVAL, "token");

  /* Nothing taken yet: a poll times out. */
  colio_work w;
  CHECK_RC(colio_work_take(0, &w), COLIO_ETIMEDOUT);

  pthread_t th[6];
  for (int i = 0; i < 6; i++)
    REQUIRE(pthread_create(&th[i], NULL, worker, NULL) == 0);

  /* Fan-out: bytes as the generator's, at most python_workers at once. */
  enum { N = 40 };
  colio_range r[N];
  colio_future *f[N];
  unsigned char *buf = (unsigned char *)malloc(N * 30000);
  for (int i = 0; i < N; i++) {
    r[i].offset = (int64_t)i * 25000;
    r[i].size = 30000;
    r[i].buf = buf + i * 30000;
  }
  OK(colio_readv_async(src, r, N, f));
  for (int i = 0; i < N; i++) {
    int64_t n = 0;
    OK(colio_future_wait(f[i], COLIO_WAIT_FOREVER, &n));
    CHECK(n == 30000 && check_bytes(buf + i * 30000, r[i].offset, 30000));
    colio_future_free(f[i]);
  }
  CHECK(peak >= 1 && peak <= 3);

  /* A large read split into parts, across the end. */
  unsigned char *big = (unsigned char *)malloc(SIZE);
  int64_t got = 0;
  OK(colio_read(src, big, SIZE, 1000, &got));
  CHECK(got == SIZE - 1000 && check_bytes(big, 1000, got));

  /* Cancel: with every place held, a queued part is cancellable. */
  OK(colio_config_set_int("python_workers", 1));
  hold_zero = 1;
  colio_future *held = NULL, *later = NULL;
  OK(colio_read_async(src, buf, 10, 0, &held));
  sleep_ns(20000000);
  OK(colio_read_async(src, buf + 100, 10, 500, &later));
  int cancelled = 0;
  OK(colio_future_cancel(later, &cancelled));
  CHECK(cancelled == 1);
  hold_zero = 0;
  OK(colio_future_wait(held, COLIO_WAIT_FOREVER, NULL));
  CHECK_RC(colio_future_wait(later, COLIO_WAIT_FOREVER, NULL), COLIO_ECANCELLED);
  colio_future_free(held);
  colio_future_free(later);

  /* Nested with one place: the outer part's worker waits on an inner part,
   * which another worker takes. */
  colio_source *outer = NULL;
  OK(colio_source_from_queue(SIZE, COLIO_CALLBACK_CONCURRENT, (void *)2, &outer));
  inner = src;
  got = 0;
  OK(colio_read(outer, big, 50000, 3000, &got));
  CHECK(got == 50000 && check_bytes(big, 3000, 50000));
  inner = NULL;
  OK(colio_source_free(outer));

  /* Free with parts queued: they fail with COLIO_ECLOSED, the held one
   * finishes first. */
  hold_zero = 1;
  OK(colio_read_async(src, buf, 10, 0, &held));
  sleep_ns(20000000);
  colio_future *q[5];
  for (int i = 0; i < 5; i++)
    OK(colio_read_async(src, buf + 100 + i * 10, 10, 1000 + i * 10, &q[i]));
  hold_zero = 0;
  OK(colio_source_free(src));
  OK(colio_future_wait(held, COLIO_WAIT_FOREVER, NULL));
  int closed = 0;
  for (int i = 0; i < 5; i++) {
    int rc = colio_future_wait(q[i], COLIO_WAIT_FOREVER, NULL);
    CHECK(rc == COLIO_OK || rc == COLIO_ECLOSED);
    closed += rc == COLIO_ECLOSED;
    colio_future_free(q[i]);
  }
  CHECK(closed >= 1);
  colio_future_free(held);

  /* No queued source open: every worker is told to exit. */
  for (int i = 0; i < 6; i++)
    pthread_join(th[i], NULL);
  CHECK_RC(colio_work_take(0, &w), COLIO_ECLOSED);
  free(buf);
  free(big);
  OK(colio_config_set_int("python_workers", 8));
  if (t_failures)
    fprintf(stderr, "test_work: %d failures\n", t_failures);
  else
    printf("test_work: ok\n");
  return t_failures != 0;
}
