/*
 * test_futures.c: completion callbacks, cancel, timeouts, freeing an
 * in-flight future, and freeing a source with reads queued.
 */
#include "harness.h"

/* ---- a gate a callback source blocks on until the test opens it ------- */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int gate_open, entered, finished;

static int64_t gated_read(void *ctx, void *buf, int64_t size, int64_t offset) {
  (void)ctx;
  pthread_mutex_lock(&mu);
  entered++;
  pthread_cond_broadcast(&cv);
  while (!gate_open)
    pthread_cond_wait(&cv, &mu);
  pthread_mutex_unlock(&mu);
  memset(buf, (int)(offset & 0xff), (size_t)size);
  pthread_mutex_lock(&mu);
  finished++;
  pthread_mutex_unlock(&mu);
  return size;
}

static void gate_reset(void) {
  pthread_mutex_lock(&mu);
  gate_open = entered = finished = 0;
  pthread_mutex_unlock(&mu);
}

static void gate_wait_entered(int n) {
  pthread_mutex_lock(&mu);
  while (entered < n)
    pthread_cond_wait(&cv, &mu);
  pthread_mutex_unlock(&mu);
}

static void gate_release(void) {
  pthread_mutex_lock(&mu);
  gate_open = 1;
  pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&mu);
}

static void *release_later(void *arg) {
  (void)arg;
  sleep_ns(50 * 1000000);
  gate_release();
  return NULL;
}

static colio_source *gated_source(void) {
  colio_source_callbacks cb;
  memset(&cb, 0, sizeof cb);
  cb.struct_size = sizeof cb;
  cb.read = gated_read;
  cb.flags = COLIO_CALLBACK_CONCURRENT;
  colio_source *src = NULL;
  OK(colio_source_from_callbacks(&cb, 1 << 20, &src));
  REQUIRE(src != NULL);
  return src;
}

/* ---- completion callbacks ---------------------------------------------- */
typedef struct {
  int runs;
  int status;
  int64_t nbytes;
  colio_future *fut;
  pthread_t thread;
  int message_ok;
} done_rec;

static pthread_t main_thread;

static void on_done(void *ctx, colio_future *fut, int status, int64_t nbytes) {
  done_rec *d = (done_rec *)ctx;
  d->status = status;
  d->nbytes = nbytes;
  d->fut = fut;
  d->thread = pthread_self();
  /* The future is valid inside its callback. */
  const char *msg = NULL;
  int rc = colio_future_error(fut, &msg, NULL);
  d->message_ok = rc == status && msg != NULL && (status == COLIO_OK) == (msg[0] == '\0');
  __atomic_add_fetch(&d->runs, 1, __ATOMIC_SEQ_CST);
}

static void test_on_done(void) {
  enum { N = 50 };
  static unsigned char data[1 << 16], buf[N][1 << 16], gbuf[4096];
  fill_pattern(data, sizeof data, 3);
  colio_source *mem = NULL;
  OK(colio_source_from_memory(data, sizeof data, &mem));
  colio_source *gated = gated_source();
  gate_reset();

  done_rec rec[N + 2];
  memset(rec, 0, sizeof rec);
  colio_future *f[N + 2];
  for (int i = 0; i < N; i++) {
    /* Some complete inline before on_done is called: it runs at once. */
    OK(colio_read_async(mem, buf[i], (i + 1) * 1000, 0, &f[i]));
    OK(colio_future_on_done(f[i], on_done, &rec[i]));
  }
  /* One that fails (starts past the end is refused at call time, so use
   * a read the source fails: a read past a memory sink's end). */
  unsigned char small[8];
  colio_sink *snk = NULL;
  OK(colio_sink_from_memory(small, sizeof small, &snk));
  OK(colio_write_async(snk, data, 100, 0, &f[N]));
  OK(colio_future_on_done(f[N], on_done, &rec[N]));
  /* One that is still blocked when its callback is registered. */
  OK(colio_read_async(gated, gbuf, 4096, 4096, &f[N + 1]));
  OK(colio_future_on_done(f[N + 1], on_done, &rec[N + 1]));
  gate_wait_entered(1);
  CHECK(colio_future_done(f[N + 1]) == 0);
  CHECK(rec[N + 1].runs == 0);
  gate_release();

  for (int i = 0; i < N + 2; i++)
    OK(colio_future_free(f[i])); /* waits for the callback too */
  for (int i = 0; i < N; i++) {
    CHECK(rec[i].runs == 1);
    CHECK(rec[i].status == COLIO_OK);
    CHECK(rec[i].nbytes == (i + 1) * 1000);
    CHECK(rec[i].fut == f[i]);
    CHECK(!pthread_equal(rec[i].thread, main_thread));
    if (!rec[i].message_ok) fprintf(stderr, "i=%d status=%d\n", i, rec[i].status);
    CHECK(rec[i].message_ok);
    CHECK(memcmp(buf[i], data, (size_t)(i + 1) * 1000) == 0);
  }
  CHECK(rec[N].runs == 1 && rec[N].status == COLIO_ENOSPC && rec[N].message_ok);
  CHECK(rec[N + 1].runs == 1 && rec[N + 1].status == COLIO_OK && rec[N + 1].nbytes == 4096);
  /* All on one notifier thread, not the caller's. */
  for (int i = 1; i < N + 2; i++)
    CHECK(pthread_equal(rec[i].thread, rec[0].thread));
  sleep_ns(20 * 1000000);
  for (int i = 0; i < N + 2; i++)
    CHECK(rec[i].runs == 1); /* exactly once */
  CHECK_RC(colio_sink_free(snk), COLIO_ENOSPC);
  OK(colio_source_free(mem));
  OK(colio_source_free(gated));
}

/* ---- cancel, timeouts, free of an in-flight future -------------------- */
static void test_cancel_and_timeouts(void) {
  OK(colio_config_set_int("threads", 1));
  colio_source *src = gated_source();
  gate_reset();
  static unsigned char buf[4][4096];
  colio_future *running = NULL, *queued = NULL, *queued2 = NULL;
  OK(colio_read_async(src, buf[0], 4096, 0, &running));
  gate_wait_entered(1);
  OK(colio_read_async(src, buf[1], 4096, 4096, &queued));
  OK(colio_read_async(src, buf[2], 4096, 8192, &queued2));

  /* A wait that times out leaves the future valid and running. */
  int64_t t0 = now_ns(), n = -1;
  CHECK_ERR(colio_future_wait(running, 20 * 1000000, &n), COLIO_ETIMEDOUT, "did not complete");
  int64_t waited = now_ns() - t0;
  CHECK(waited >= 19 * 1000000 && waited < 2000000000);
  CHECK_ERR(colio_future_wait(running, 0, &n), COLIO_ETIMEDOUT, "not completed");
  CHECK(colio_future_done(running) == 0);
  CHECK_RC(colio_future_error(running, NULL, NULL), COLIO_ETIMEDOUT);

  /* Cancel: the queued read never starts; the running one cannot stop. */
  int cancelled = -1;
  OK(colio_future_cancel(queued, &cancelled));
  CHECK(cancelled == 1);
  OK(colio_future_cancel(running, &cancelled));
  CHECK(cancelled == 0);
  OK(colio_future_cancel(queued, NULL));

  gate_release();
  OK(colio_future_wait(running, COLIO_WAIT_FOREVER, &n));
  CHECK(n == 4096);
  CHECK_ERR(colio_future_wait(queued, COLIO_WAIT_FOREVER, &n), COLIO_ECANCELLED, "cancelled");
  CHECK(n == 0);
  const char *msg = NULL;
  CHECK_RC(colio_future_error(queued, &msg, NULL), COLIO_ECANCELLED);
  CHECK(msg && strstr(msg, "cancelled"));
  OK(colio_future_wait(queued2, COLIO_WAIT_FOREVER, &n));
  /* Cancelling what has completed does nothing. */
  OK(colio_future_cancel(running, &cancelled));
  CHECK(cancelled == 0);
  OK(colio_future_wait(running, 0, NULL));
  OK(colio_future_free(running));
  OK(colio_future_free(queued));
  OK(colio_future_free(queued2));

  /* Freeing an in-flight future waits for it: no byte lands after. */
  gate_reset();
  colio_future *f = NULL;
  OK(colio_read_async(src, buf[3], 4096, 4096, &f));
  gate_wait_entered(1);
  pthread_t t;
  REQUIRE(pthread_create(&t, NULL, release_later, NULL) == 0);
  t0 = now_ns();
  OK(colio_future_free(f));
  CHECK(now_ns() - t0 >= 40 * 1000000);
  pthread_mutex_lock(&mu);
  CHECK(finished == 1);
  pthread_mutex_unlock(&mu);
  pthread_join(t, NULL);

  /* Freeing a source with a read queued: the queued one fails with
   * COLIO_ECLOSED, the running one finishes. */
  gate_reset();
  colio_future *a = NULL, *b = NULL;
  OK(colio_read_async(src, buf[0], 4096, 0, &a));
  gate_wait_entered(1);
  OK(colio_read_async(src, buf[1], 4096, 0, &b));
  REQUIRE(pthread_create(&t, NULL, release_later, NULL) == 0);
  OK(colio_source_free(src));
  OK(colio_future_wait(a, COLIO_WAIT_FOREVER, NULL));
  CHECK_ERR(colio_future_wait(b, COLIO_WAIT_FOREVER, NULL), COLIO_ECLOSED, "closed");
  OK(colio_future_free(a));
  OK(colio_future_free(b));
  pthread_join(t, NULL);
  OK(colio_config_set_int("threads", 8));
}

int main(void) {
  watchdog(60);
  main_thread = pthread_self();
  test_on_done();
  test_cancel_and_timeouts();
  return finish("futures (callbacks, cancel, timeouts)");
}
