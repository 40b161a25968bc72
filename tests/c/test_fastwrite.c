/*
 * test_fastwrite.c: small synchronous writes to file sinks served in C
 * (capi/fastpath.c), beside the engine's own writes to the same sink.
 *
 * - 4 threads append small chunks with colio_write_ex (the fast path)
 *   while 2 more append large ones (over small_write_threshold: Go) and
 *   asynchronous ones: every write lands at the offset it was given, the
 *   offsets tile the file without a gap or an overlap, the file holds each
 *   writer's bytes there, and colio_sink_size is the end;
 * - explicit-offset writes of random sizes match a reference buffer;
 * - a write that fails (/dev/full) returns the engine's error and makes
 *   it sticky (flush and free report it), an append keeping its offset;
 * - a sink freed while threads write to it never writes after the free:
 *   a file opened right after (which takes the same descriptor number)
 *   stays empty;
 * - the writes are counted in colio_stats;
 * - a file sink's handle passed to colio_read, or a file source's to
 *   colio_write, is refused as the wrong kind of handle (both are
 *   registered with the fast paths).
 */
#include "harness.h"

#include <pthread.h>
#include <sys/stat.h>

#define SMALL_MAX 4096
#define PER_THREAD 3000
#define NSMALL 4
#define NBIG 2
#define BIG 300000

struct placed {
  int64_t off, size;
  unsigned char tag; /* the byte the write was made of */
};

static colio_sink *sink;
static struct placed log_[NSMALL * PER_THREAD + NBIG * 40];
static int nlog; /* atomically updated */

static void record(int64_t off, int64_t size, unsigned char tag) {
  int i = __atomic_fetch_add(&nlog, 1, __ATOMIC_SEQ_CST);
  log_[i].off = off;
  log_[i].size = size;
  log_[i].tag = tag;
}

static void *small_writer(void *arg) {
  int id = (int)(intptr_t)arg;
  unsigned char buf[SMALL_MAX];
  uint64_t s = 0x1234567ull * (uint64_t)(id + 1);
  for (int i = 0; i < PER_THREAD; i++) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    int64_t n = 1 + (int64_t)(s % SMALL_MAX);
    unsigned char tag = (unsigned char)(1 + (s >> 20) % 250);
    memset(buf, tag, (size_t)n);
    int64_t got = -1, at = -1;
    OK(colio_write_ex(sink, buf, n, COLIO_APPEND, &got, &at));
    CHECK(got == n && at >= 0);
    record(at, n, tag);
  }
  return NULL;
}

static void *big_writer(void *arg) {
  int id = (int)(intptr_t)arg;
  unsigned char *buf = (unsigned char *)xmalloc(BIG);
  for (int i = 0; i < 20; i++) {
    unsigned char tag = (unsigned char)(251 + (id + i) % 4);
    memset(buf, tag, BIG);
    int64_t got = -1, at = -1;
    OK(colio_write_ex(sink, buf, BIG, COLIO_APPEND, &got, &at));
    CHECK(got == BIG);
    record(at, BIG, tag);
    /* and one asynchronous small append, which the engine runs */
    colio_future *f = NULL;
    OK(colio_write_async(sink, buf, 100, COLIO_APPEND, &f));
    int64_t off = -1, n = -1;
    OK(colio_future_offset(f, &off));
    OK(colio_future_wait(f, -1, &n));
    CHECK(n == 100);
    record(off, 100, tag);
    OK(colio_future_free(f));
  }
  free(buf);
  return NULL;
}

static int by_offset(const void *a, const void *b) {
  int64_t x = ((const struct placed *)a)->off, y = ((const struct placed *)b)->off;
  return (x > y) - (x < y);
}

static void concurrent_appends(void) {
  char *path = temp_path("fastwrite");
  OK(colio_sink_open_file(path, COLIO_SINK_CREATE | COLIO_SINK_TRUNCATE, &sink));
  colio_counters before;
  memset(&before, 0, sizeof before);
  before.struct_size = sizeof before;
  OK(colio_stats(&before));
  pthread_t t[NSMALL + NBIG];
  for (int i = 0; i < NSMALL; i++)
    REQUIRE(pthread_create(&t[i], NULL, small_writer, (void *)(intptr_t)i) == 0);
  for (int i = 0; i < NBIG; i++)
    REQUIRE(pthread_create(&t[NSMALL + i], NULL, big_writer, (void *)(intptr_t)i) == 0);
  for (int i = 0; i < NSMALL + NBIG; i++)
    pthread_join(t[i], NULL);
  int64_t size = -1;
  OK(colio_sink_size(sink, &size));
  colio_counters after;
  memset(&after, 0, sizeof after);
  after.struct_size = sizeof after;
  OK(colio_stats(&after));
  CHECK(after.bytes_written - before.bytes_written == size);
  CHECK(after.ops_inline - before.ops_inline >= NSMALL * PER_THREAD);
  OK(colio_sink_free(sink));

  qsort(log_, (size_t)nlog, sizeof log_[0], by_offset);
  int64_t pos = 0;
  for (int i = 0; i < nlog; i++) {
    if (log_[i].off != pos) {
      fprintf(stderr, "write %d: at %lld, want %lld (a gap or an overlap)\n", i,
              (long long)log_[i].off, (long long)pos);
      t_failures++;
      break;
    }
    pos += log_[i].size;
  }
  CHECK(pos == size);
  int fd = open(path, O_RDONLY);
  REQUIRE(fd >= 0);
  unsigned char *back = (unsigned char *)xmalloc((size_t)size);
  CHECK(pread_all(fd, back, size, 0) == size);
  for (int i = 0; i < nlog; i++)
    for (int64_t k = 0; k < log_[i].size; k++)
      if (back[log_[i].off + k] != log_[i].tag) {
        fprintf(stderr, "write %d at %lld: byte %lld is %d, want %d\n", i, (long long)log_[i].off,
                (long long)k, back[log_[i].off + k], log_[i].tag);
        t_failures++;
        i = nlog;
        break;
      }
  free(back);
  close(fd);
  unlink(path);
  free(path);
}

static void explicit_offsets(void) {
  enum { N = 1 << 20 };
  unsigned char *want = (unsigned char *)calloc(N, 1), buf[SMALL_MAX];
  REQUIRE(want != NULL);
  char *path = temp_path("fastwrite-at");
  colio_sink *s;
  OK(colio_sink_open_file(path, COLIO_SINK_CREATE | COLIO_SINK_TRUNCATE, &s));
  uint64_t r = 99;
  int64_t end = 0;
  for (int i = 0; i < 5000; i++) {
    r ^= r << 13, r ^= r >> 7, r ^= r << 17;
    int64_t n = 1 + (int64_t)(r % SMALL_MAX), off = (int64_t)((r >> 16) % (N - SMALL_MAX));
    fill_pattern(buf, n, r);
    int64_t got = -1, at = -1;
    if (i % 2)
      OK(colio_write(s, buf, n, off, &got));
    else {
      OK(colio_write_ex(s, buf, n, off, &got, &at));
      CHECK(at == off);
    }
    CHECK(got == n);
    memcpy(want + off, buf, (size_t)n);
    if (off + n > end)
      end = off + n;
  }
  int64_t size = -1;
  OK(colio_sink_size(s, &size));
  CHECK(size == end);
  OK(colio_sink_free(s));
  int fd = open(path, O_RDONLY);
  REQUIRE(fd >= 0);
  unsigned char *back = (unsigned char *)xmalloc((size_t)end);
  CHECK(pread_all(fd, back, end, 0) == end);
  CHECK(memcmp(back, want, (size_t)end) == 0);
  free(back);
  close(fd);
  unlink(path);
  free(path);
  free(want);
}

static void failing_writes(void) {
  colio_sink *s;
  OK(colio_sink_open_file("/dev/full", 0, &s)); /* every write to it is ENOSPC */
  REQUIRE(s != NULL);
  unsigned char buf[100] = {1};
  int64_t got = -1, at = -1;
  CHECK_ERR(colio_write_ex(s, buf, sizeof buf, COLIO_APPEND, &got, &at), COLIO_ENOSPC, "/dev/full");
  CHECK(at == 0);
  CHECK_ERR(colio_write_ex(s, buf, sizeof buf, COLIO_APPEND, &got, &at), COLIO_ENOSPC, "/dev/full");
  CHECK(at == (int64_t)sizeof buf); /* each failed append keeps the offset it took */
  CHECK_ERR(colio_write(s, buf, sizeof buf, 7, &got), COLIO_ENOSPC, "offset 7");
  CHECK_ERR(colio_sink_flush(s, 0), COLIO_ENOSPC, "/dev/full"); /* sticky */
  CHECK_ERR(colio_sink_free(s), COLIO_ENOSPC, "/dev/full");
}

/* Writers loop on a sink until it is freed under them. */
static volatile int stop;
static int64_t refused; /* atomically updated */

static void *loop_writer(void *arg) {
  (void)arg;
  unsigned char x[64];
  memset(x, 'X', sizeof x);
  while (!__atomic_load_n(&stop, __ATOMIC_SEQ_CST)) {
    int64_t got = 0, at = 0;
    if (colio_write_ex(sink, x, sizeof x, COLIO_APPEND, &got, &at) != COLIO_OK)
      __atomic_add_fetch(&refused, 1, __ATOMIC_SEQ_CST);
  }
  return NULL;
}

static void free_under_writers(void) {
  for (int round = 0; round < 20; round++) {
    char *path = temp_path("fastwrite-free"), *other = temp_path("fastwrite-other");
    OK(colio_sink_open_file(path, COLIO_SINK_CREATE | COLIO_SINK_TRUNCATE, &sink));
    stop = 0;
    refused = 0;
    pthread_t t[3];
    for (int i = 0; i < 3; i++)
      REQUIRE(pthread_create(&t[i], NULL, loop_writer, NULL) == 0);
    sleep_ns(2000000);
    OK(colio_sink_free(sink));
    /* the descriptor number the sink had is free now: this file takes it */
    int fd = open(other, O_RDWR | O_CREAT | O_TRUNC, 0644);
    REQUIRE(fd >= 0);
    int64_t seen = __atomic_load_n(&refused, __ATOMIC_SEQ_CST);
    for (int spin = 0; spin < 1000 && __atomic_load_n(&refused, __ATOMIC_SEQ_CST) < seen + 10; spin++)
      sleep_ns(100000);
    stop = 1;
    for (int i = 0; i < 3; i++)
      pthread_join(t[i], NULL);
    CHECK(refused > 0);
    struct stat st;
    REQUIRE(fstat(fd, &st) == 0);
    if (st.st_size != 0) {
      fprintf(stderr, "round %d: %lld bytes were written after colio_sink_free\n", round,
              (long long)st.st_size);
      t_failures++;
    }
    close(fd);
    unlink(path);
    unlink(other);
    free(path);
    free(other);
  }
}

static void wrong_kind(void) {
  char *path = temp_path("fastwrite-kind");
  colio_sink *s;
  OK(colio_sink_open_file(path, COLIO_SINK_CREATE | COLIO_SINK_TRUNCATE, &s));
  unsigned char buf[64] = {0};
  int64_t n = 0, at = 0;
  OK(colio_write(s, buf, sizeof buf, 0, &n));
  colio_source *src;
  OK(colio_source_open_file(path, &src));
  CHECK_ERR(colio_read((colio_source *)(void *)s, buf, 16, 0, &n), COLIO_EINVAL,
            "colio_sink* handle");
  CHECK_ERR(colio_write((colio_sink *)(void *)src, buf, 16, 0, &n), COLIO_EINVAL,
            "colio_source* handle");
  CHECK_ERR(colio_write_ex((colio_sink *)(void *)src, buf, 16, COLIO_APPEND, &n, &at),
            COLIO_EINVAL, "colio_source* handle");
  OK(colio_source_free(src));
  OK(colio_sink_free(s));
  unlink(path);
  free(path);
}

int main(void) {
  watchdog(120);
  wrong_kind();
  concurrent_appends();
  explicit_offsets();
  failing_writes();
  free_under_writers();
  return finish("test_fastwrite");
}
