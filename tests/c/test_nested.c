/*
 * test_nested.c: a user callback that calls back into colio and waits.
 *
 * With threads = 1, source A's read callback runs on the only level-0
 * worker and, inside it, starts a read of source B (colio_read_async) and
 * waits for it (colio_future_wait); B's callback in turn reads C with the
 * synchronous colio_read. If the nested reads were queued on the level
 * of the callback that waits for them, they would never start. colio runs
 * them one level deeper, so this completes. A watchdog turns a deadlock
 * into a failure instead of a hang.
 */
#include "harness.h"

#define SIZE 65536

static colio_source *src_b, *src_c;
static unsigned char ref[SIZE];
static int nested_failures; /* atomically updated */

/* C: bytes from the reference, with latency (never inline). */
static int64_t read_c(void *ctx, void *buf, int64_t size, int64_t offset) {
  (void)ctx;
  sleep_ns(1000000);
  memcpy(buf, ref + offset, (size_t)size);
  return size;
}

/* B: reads its bytes from C synchronously. */
static int64_t read_b(void *ctx, void *buf, int64_t size, int64_t offset) {
  (void)ctx;
  int64_t n = -1;
  if (colio_read(src_c, buf, size, offset, &n) != COLIO_OK || n != size) {
    __atomic_add_fetch(&nested_failures, 1, __ATOMIC_SEQ_CST);
    return -EIO;
  }
  return n;
}

/* A: starts an async read of B, waits for it. */
static int64_t read_a(void *ctx, void *buf, int64_t size, int64_t offset) {
  (void)ctx;
  colio_future *f = NULL;
  int64_t n = -1;
  if (colio_read_async(src_b, buf, size, offset, &f) != COLIO_OK ||
      colio_future_wait(f, COLIO_WAIT_FOREVER, &n) != COLIO_OK || n != size) {
    __atomic_add_fetch(&nested_failures, 1, __ATOMIC_SEQ_CST);
    colio_future_free(f);
    return -EIO;
  }
  colio_future_free(f);
  return n;
}

static colio_source *make(int64_t (*fn)(void *, void *, int64_t, int64_t)) {
  colio_source_callbacks cb;
  memset(&cb, 0, sizeof cb);
  cb.struct_size = sizeof cb;
  cb.read = fn;
  cb.flags = COLIO_CALLBACK_CONCURRENT; /* not FAST: always on a worker */
  colio_source *s = NULL;
  OK(colio_source_from_callbacks(&cb, SIZE, &s));
  REQUIRE(s != NULL);
  return s;
}

int main(void) {
  watchdog(20);
  fill_pattern(ref, SIZE, 11);
  OK(colio_config_set_int("threads", 1));
  src_c = make(read_c);
  src_b = make(read_b);
  colio_source *src_a = make(read_a);

  /* Several reads of A at once: the one level-0 slot is held by a
   * callback that waits, and more A reads queue behind it. */
  enum { N = 8 };
  static unsigned char buf[SIZE];
  colio_range r[N];
  colio_future *f[N];
  for (int i = 0; i < N; i++) {
    r[i].offset = i * (SIZE / N);
    r[i].size = SIZE / N;
    r[i].buf = buf + r[i].offset;
  }
  int64_t t0 = now_ns();
  OK(colio_readv_async(src_a, r, N, f));
  for (int i = 0; i < N; i++) {
    int64_t n = -1;
    OK(colio_future_wait(f[i], COLIO_WAIT_FOREVER, &n));
    CHECK(n == SIZE / N);
    OK(colio_future_free(f[i]));
  }
  CHECK(memcmp(buf, ref, SIZE) == 0);
  CHECK(nested_failures == 0);
  printf("     nested: 3 levels of re-entry with threads=1 completed in %.1f ms\n",
         (now_ns() - t0) / 1e6);
  OK(colio_source_free(src_a));
  OK(colio_source_free(src_b));
  OK(colio_source_free(src_c));
  return finish("nested callback re-entry (threads=1)");
}
