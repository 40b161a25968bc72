/*
 * test_fanout.c: 8 C threads at once fan out reads of random ranges of one
 * shared file source (small ones inline, large ones split into tasks) and
 * append to one shared file sink. Every byte read is compared with pread
 * of the same file; every append lands at the offset its future reports.
 */
#include "harness.h"

#define THREADS 8
#define FILE_SIZE ((int64_t)8 << 20)
#define BATCHES 12
#define PER_BATCH 24
#define APPENDS 40

static colio_source *src;
static colio_sink *snk;
static int ref_fd;
static pthread_barrier_t start;
static int failures; /* atomically updated */

typedef struct {
  int id;
  int64_t offs[APPENDS];
  int64_t lens[APPENDS];
} worker;

static uint64_t rnd(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static void fail(const char *what, int id) {
  fprintf(stderr, "thread %d: %s (last error: %s)\n", id, what, colio_last_error());
  __atomic_add_fetch(&failures, 1, __ATOMIC_SEQ_CST);
}

static void *run(void *arg) {
  worker *w = (worker *)arg;
  uint64_t seed = 0x1234567ull + (uint64_t)w->id * 7919;
  colio_range r[PER_BATCH];
  colio_future *fs[PER_BATCH];
  unsigned char *want = (unsigned char *)xmalloc(FILE_SIZE);
  pthread_barrier_wait(&start);
  for (int b = 0; b < BATCHES; b++) {
    for (int i = 0; i < PER_BATCH; i++) {
      int64_t size;
      switch (rnd(&seed) % 3) {
      case 0: size = 1 + (int64_t)(rnd(&seed) % 4096); break;          /* inline */
      case 1: size = 1 + (int64_t)(rnd(&seed) % (256 << 10)); break;  /* one task */
      default: size = 1 + (int64_t)(rnd(&seed) % (3 << 20)); break;   /* split */
      }
      r[i].offset = (int64_t)(rnd(&seed) % (uint64_t)FILE_SIZE);
      r[i].size = size; /* may cross the end: the count says how many */
      r[i].buf = xmalloc((size_t)size);
    }
    if (colio_readv_async(src, r, PER_BATCH, fs) != COLIO_OK) {
      fail("readv_async", w->id);
      break;
    }
    /* Wait in reverse order: waiting order must not matter. */
    for (int i = PER_BATCH - 1; i >= 0; i--) {
      int64_t n = -1;
      if (colio_future_wait(fs[i], COLIO_WAIT_FOREVER, &n) != COLIO_OK)
        fail("wait", w->id);
      int64_t expect = pread_all(ref_fd, want, r[i].size, r[i].offset);
      if (n != expect || memcmp(r[i].buf, want, (size_t)n) != 0)
        fail("bytes differ from pread", w->id);
      colio_future_free(fs[i]);
      free(r[i].buf);
    }
  }
  /* Appends of a thread-specific byte: where each landed is checked later. */
  for (int i = 0; i < APPENDS; i++) {
    int64_t len = 1 + (int64_t)(rnd(&seed) % 20000);
    unsigned char *buf = (unsigned char *)xmalloc((size_t)len);
    memset(buf, 'A' + w->id, (size_t)len);
    colio_future *f = NULL;
    if (colio_write_async(snk, buf, len, COLIO_APPEND, &f) != COLIO_OK ||
        colio_future_offset(f, &w->offs[i]) != COLIO_OK ||
        colio_future_wait(f, COLIO_WAIT_FOREVER, NULL) != COLIO_OK)
      fail("append", w->id);
    w->lens[i] = len;
    colio_future_free(f);
    free(buf);
  }
  free(want);
  return NULL;
}

int main(void) {
  watchdog(120);
  unsigned char *data = (unsigned char *)xmalloc(FILE_SIZE);
  fill_pattern(data, FILE_SIZE, 7);
  char *path = temp_path("fanout");
  char *out = temp_path("fanout-out");
  write_file(path, data, FILE_SIZE);
  ref_fd = open(path, O_RDONLY);
  REQUIRE(ref_fd >= 0);
  OK(colio_config_set_int("task_size", 512 << 10));
  OK(colio_source_open_file(path, &src));
  OK(colio_sink_open_file(out, COLIO_SINK_CREATE | COLIO_SINK_TRUNCATE, &snk));

  colio_counters st;
  memset(&st, 0, sizeof st);
  st.struct_size = sizeof st;
  OK(colio_stats(&st));
  int64_t inline_before = st.ops_inline, tasks_before = st.tasks;

  pthread_barrier_init(&start, NULL, THREADS);
  pthread_t t[THREADS];
  worker w[THREADS];
  for (int i = 0; i < THREADS; i++) {
    w[i].id = i;
    REQUIRE(pthread_create(&t[i], NULL, run, &w[i]) == 0);
  }
  for (int i = 0; i < THREADS; i++)
    pthread_join(t[i], NULL);
  CHECK(failures == 0);

  OK(colio_stats(&st));
  CHECK(st.ops_inline > inline_before); /* small reads ran inline */
  CHECK(st.tasks > tasks_before);       /* large ones went to the pool */

  int64_t total = 0;
  for (int i = 0; i < THREADS; i++)
    for (int j = 0; j < APPENDS; j++)
      total += w[i].lens[j];
  int64_t size = -1;
  OK(colio_sink_size(snk, &size));
  CHECK(size == total);
  OK(colio_sink_free(snk));
  int fd = open(out, O_RDONLY);
  REQUIRE(fd >= 0);
  CHECK(lseek(fd, 0, SEEK_END) == total);
  unsigned char *got = (unsigned char *)xmalloc((size_t)total);
  CHECK(pread_all(fd, got, total, 0) == total);
  for (int i = 0; i < THREADS; i++)
    for (int j = 0; j < APPENDS; j++)
      for (int64_t k = 0; k < w[i].lens[j]; k++)
        if (got[w[i].offs[j] + k] != 'A' + i) {
          CHECK(!"append landed elsewhere");
          k = w[i].lens[j];
          j = APPENDS;
        }
  close(fd);
  close(ref_fd);
  OK(colio_source_free(src));
  unlink(path);
  unlink(out);
  free(path);
  free(out);
  free(got);
  free(data);
  return finish("fanout (8 threads)");
}
