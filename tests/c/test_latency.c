/*
 * test_latency.c: a callback source with 2 ms of latency per read, like an
 * object store. 20 reads started at once must overlap: the peak number of
 * reads in flight, counted inside the callback (not by colio), is the
 * thread setting (8 by default). The calls return before the reads end
 * (eager, not deferred), and no read runs on the caller's thread.
 */
#include "harness.h"

#define READS 20
#define READ_SIZE 65536
#define LATENCY_NS 2000000

static int in_flight, peak, calls, on_caller; /* atomically updated */
static pthread_t caller;

static int64_t slow_read(void *ctx, void *buf, int64_t size, int64_t offset) {
  (void)ctx;
  int now = __atomic_add_fetch(&in_flight, 1, __ATOMIC_SEQ_CST);
  int p = __atomic_load_n(&peak, __ATOMIC_SEQ_CST);
  while (now > p && !__atomic_compare_exchange_n(&peak, &p, now, 0, __ATOMIC_SEQ_CST,
                                                 __ATOMIC_SEQ_CST)) {
  }
  __atomic_add_fetch(&calls, 1, __ATOMIC_SEQ_CST);
  if (pthread_equal(pthread_self(), caller))
    __atomic_add_fetch(&on_caller, 1, __ATOMIC_SEQ_CST);
  sleep_ns(LATENCY_NS);
  fill_pattern((unsigned char *)buf, size, (uint64_t)offset);
  __atomic_sub_fetch(&in_flight, 1, __ATOMIC_SEQ_CST);
  return size;
}

int main(void) {
  watchdog(60);
  caller = pthread_self();
  int64_t threads = 0;
  OK(colio_config_get_int("threads", &threads));
  if (!getenv("COLIO_NTHREADS"))
    CHECK(threads == 8);

  colio_source_callbacks cb;
  memset(&cb, 0, sizeof cb);
  cb.struct_size = sizeof cb;
  cb.read = slow_read;
  cb.flags = COLIO_CALLBACK_CONCURRENT; /* not FAST: it has latency */
  colio_source *src = NULL;
  OK(colio_source_from_callbacks(&cb, (int64_t)READS * READ_SIZE, &src));

  unsigned char *buf = (unsigned char *)xmalloc((size_t)READS * READ_SIZE);
  unsigned char *want = (unsigned char *)xmalloc(READ_SIZE);
  /* The peak must never exceed the thread setting. Reaching it, and the
   * timings, need the workers to start within one 2 ms latency, which a
   * loaded 2-core machine does not always grant: a run that falls short is
   * repeated, up to 5 runs, and the best one is judged. */
  int best_peak = 0;
  int64_t best_submitted = INT64_MAX, best_elapsed = INT64_MAX;
  for (int attempt = 0; attempt < 5; attempt++) {
    __atomic_store_n(&peak, 0, __ATOMIC_SEQ_CST);
    __atomic_store_n(&calls, 0, __ATOMIC_SEQ_CST);
    memset(buf, 0, (size_t)READS * READ_SIZE);
    colio_future *f[READS];
    int64_t t0 = now_ns();
    for (int i = 0; i < READS; i++)
      OK(colio_read_async(src, buf + (int64_t)i * READ_SIZE, READ_SIZE, (int64_t)i * READ_SIZE,
                          &f[i]));
    int64_t submitted = now_ns() - t0;
    for (int i = 0; i < READS; i++) {
      int64_t n = -1;
      OK(colio_future_wait(f[i], COLIO_WAIT_FOREVER, &n));
      CHECK(n == READ_SIZE);
      OK(colio_future_free(f[i]));
    }
    int64_t elapsed = now_ns() - t0;
    for (int i = 0; i < READS; i++) {
      fill_pattern(want, READ_SIZE, (uint64_t)i * READ_SIZE);
      CHECK(memcmp(buf + (int64_t)i * READ_SIZE, want, READ_SIZE) == 0);
    }
    CHECK(calls == READS);
    CHECK(peak <= (int)threads);
    printf("     latency: %d reads of 2 ms, peak in flight %d (threads %lld), "
           "submitted in %.2f ms, all done in %.2f ms (serial: %.0f ms)\n",
           READS, peak, (long long)threads, submitted / 1e6, elapsed / 1e6,
           READS * LATENCY_NS / 1e6);
    best_peak = peak > best_peak ? peak : best_peak;
    best_submitted = submitted < best_submitted ? submitted : best_submitted;
    best_elapsed = elapsed < best_elapsed ? elapsed : best_elapsed;
    if (best_peak == (int)threads && best_submitted < (int64_t)READS * LATENCY_NS / 2 &&
        best_elapsed < (int64_t)READS * LATENCY_NS)
      break;
  }
  CHECK(best_peak == (int)threads);
  CHECK(on_caller == 0);
  /* Eager: 20 submissions return long before 20 x 2 ms of reads. */
  CHECK(best_submitted < (int64_t)READS * LATENCY_NS / 2);
  /* Overlap: far faster than serial (ceil(20/8) = 3 rounds is ~6 ms). */
  CHECK(best_elapsed < (int64_t)READS * LATENCY_NS);
  OK(colio_source_free(src));
  free(buf);
  free(want);
  return finish("latency (2 ms callback source)");
}
