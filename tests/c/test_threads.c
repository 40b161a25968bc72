/*
 * test_threads.c: the documented maximum of threads with nested blocking
 * callbacks does not kill the process, and nesting beyond colio's OS-thread
 * bound is an error from the call that would exceed it (issue 12.10).
 *
 * Before the fix, part 1 aborted the process with "fatal error: thread
 * exhaustion": threads=4096 with 3 levels of callbacks that each block in
 * a nested colio_read pins 3 x 4096 = 12,288 OS threads, and Go allows
 * 10,000 by default.
 *
 * 1. threads=4096; 4096 reads at level 0 whose callbacks each read at
 *    level 1, whose callbacks each read at level 2, where every callback
 *    waits until all 4096 are in flight at once (a barrier, with a generous
 *    hang watchdog). The bytes that come back up are the generator's.
 * 2. threads=4096 allows 4 levels (4 x 4096 = 16384): a chain of nested
 *    reads at level 4 fails with COLIO_EINVAL, the whole read with the
 *    callback's error, and the process goes on.
 * 3. threads=2048 with a chain blocked at level 4 (5 levels in use):
 *    raising threads to 4096 is refused with COLIO_EINVAL; once the chain
 *    ends it is accepted.
 */
#include "harness.h"

#define N 4096
#define STRIDE (2 * N) /* offsets d*STRIDE + 2i: depth d, read i, never adjacent */
#define BOUND COLIO_MAX_BLOCKED_THREADS

static colio_source *src;
static int leaf_depth;               /* the depth whose callbacks do not nest */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int64_t arrived;              /* leaf callbacks in flight; under mu */
static int64_t barrier = N;          /* how many must arrive before any returns */
static int64_t peak_threads;         /* OS threads seen at the barrier */
static int nested_rc;                /* part 2: what the too-deep colio_read returned */
static char nested_msg[512];
static int block_leaf;               /* part 3: leaf callbacks block until released */
static int chain_release;            /* part 3: lets the blocked chain end; atomic */
static int64_t chain_blocked;        /* part 3: the chain reached its leaf; atomic */

static unsigned char pattern_at(int64_t off) {
  unsigned char b;
  fill_pattern(&b, 1, (uint64_t)off + 1);
  return b;
}

static int64_t os_threads(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  int64_t n = -1;
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "Threads: %lld", (long long *)&n) == 1)
      break;
  if (f)
    fclose(f);
  return n;
}

static int64_t cb_read(void *ctx, void *buf, int64_t size, int64_t offset) {
  (void)ctx;
  int depth = (int)(offset / STRIDE);
  if (depth < leaf_depth) {
    int64_t got = 0;
    int rc = colio_read(src, buf, size, offset + STRIDE, &got);
    if (rc != COLIO_OK) {
      if (nested_rc == 0) {
        nested_rc = rc;
        snprintf(nested_msg, sizeof nested_msg, "%s", colio_last_error());
      }
      return -1;
    }
    return got;
  }
  if (block_leaf) { /* part 3: block until released */
    __atomic_add_fetch(&chain_blocked, 1, __ATOMIC_SEQ_CST);
    while (!__atomic_load_n(&chain_release, __ATOMIC_SEQ_CST))
      sleep_ns(1000000); /* one thread */
  } else {
    /* A barrier on a condition variable: thousands of threads polling
     * would starve the ones still being started. */
    struct timespec limit;
    clock_gettime(CLOCK_REALTIME, &limit);
    limit.tv_sec += 300; /* hang guard, not a timing check */
    int ok = 1;
    pthread_mutex_lock(&mu);
    if (++arrived == barrier) {
      peak_threads = os_threads();
      pthread_cond_broadcast(&cv);
    }
    while (arrived < barrier && ok)
      ok = pthread_cond_timedwait(&cv, &mu, &limit) != ETIMEDOUT;
    pthread_mutex_unlock(&mu);
    if (!ok)
      return -ETIMEDOUT;
  }
  for (int64_t i = 0; i < size; i++)
    ((unsigned char *)buf)[i] = pattern_at(offset + i);
  return size;
}

static void part1_max_threads_nested(void) {
  OK(colio_config_set_int("threads", N));
  leaf_depth = 2;
  colio_range *r = (colio_range *)xmalloc(N * sizeof *r);
  unsigned char *bufs = (unsigned char *)xmalloc(N);
  colio_future **f = (colio_future **)xmalloc(N * sizeof *f);
  memset(bufs, 0, N);
  for (int i = 0; i < N; i++) {
    r[i].offset = 2 * i;
    r[i].size = 1;
    r[i].buf = bufs + i;
  }
  OK(colio_readv_async(src, r, N, f));
  int bad = 0;
  for (int i = 0; i < N; i++) {
    int64_t got = 0;
    int rc = colio_future_wait(f[i], COLIO_WAIT_FOREVER, &got);
    if (rc != COLIO_OK || got != 1 || bufs[i] != pattern_at(2 * STRIDE + 2 * i))
      bad++;
    OK(colio_future_free(f[i]));
  }
  CHECK(bad == 0);
  CHECK(arrived == N);
  printf("     threads=4096, 3 nested levels: %d reads in flight at once, %lld OS threads "
         "at the peak, %d wrong\n", N, (long long)peak_threads, bad);
  CHECK(peak_threads >= 3 * N);
  free(r);
  free(bufs);
  free(f);
}

static void part2_too_deep(void) {
  leaf_depth = 4; /* the callback at level 3 reads at level 4 */
  barrier = 1;
  arrived = 0;
  unsigned char b = 0;
  int64_t got = 0;
  CHECK_ERR(colio_read(src, &b, 1, 0, &got), COLIO_ECALLBACK, "callback");
  CHECK(nested_rc == COLIO_EINVAL);
  if (!strstr(nested_msg, "16384")) {
    fprintf(stderr, "too-deep message: %s\n", nested_msg);
    CHECK(strstr(nested_msg, "16384") != NULL);
  }
  printf("     level 4 at threads=4096: %s\n", nested_msg);
  /* Within the bound the engine still works: 4 levels. */
  leaf_depth = 3;
  nested_rc = 0;
  OK(colio_read(src, &b, 1, 0, &got));
  CHECK(got == 1 && b == pattern_at(3 * STRIDE));
}

static void *chain_thread(void *arg) {
  (void)arg;
  unsigned char b = 0;
  int64_t got = 0;
  OK(colio_read(src, &b, 1, 0, &got));
  CHECK(got == 1 && b == pattern_at(4 * STRIDE));
  return NULL;
}

static void part3_refused_setting(void) {
  OK(colio_config_set_int("threads", 2048)); /* 8 levels allowed */
  nested_rc = 0;
  leaf_depth = 4;
  block_leaf = 1;
  pthread_t t;
  REQUIRE(pthread_create(&t, NULL, chain_thread, NULL) == 0);
  while (__atomic_load_n(&chain_blocked, __ATOMIC_SEQ_CST) == 0)
    sleep_ns(1000000);
  /* Levels 0 to 4 are in use: 5 x 4096 would exceed the bound. */
  CHECK_ERR(colio_config_set_int("threads", N), COLIO_EINVAL, "16384");
  printf("     threads=4096 with 5 levels in use: %s\n", colio_last_error());
  int64_t v = 0;
  OK(colio_config_get_int("threads", &v));
  CHECK(v == 2048);
  __atomic_store_n(&chain_release, 1, __ATOMIC_SEQ_CST);
  REQUIRE(pthread_join(t, NULL) == 0);
  CHECK(nested_rc == 0);
  OK(colio_config_set_int("threads", N)); /* nothing nested now */
  OK(colio_config_get_int("threads", &v));
  CHECK(v == N);
}

int main(void) {
  watchdog(600);
  colio_source_callbacks cb;
  memset(&cb, 0, sizeof cb);
  cb.struct_size = sizeof cb;
  cb.read = cb_read;
  cb.flags = COLIO_CALLBACK_CONCURRENT;
  OK(colio_source_from_callbacks(&cb, 8 * STRIDE, &src));
  REQUIRE(src != NULL);
  part1_max_threads_nested();
  part2_too_deep();
  part3_refused_setting();
  OK(colio_source_free(src));
  return finish("threads: threads=4096 with nested blocking callbacks, bounded OS threads");
}
