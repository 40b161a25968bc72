/*
 * test_basic.c: file, memory and callback sources and sinks, end to end,
 * with every byte compared to a reference made without colio.
 */
#include "harness.h"

#define FILE_SIZE ((int64_t)(3 << 20) + 12345)

static void test_version(void) {
  char want[64];
  snprintf(want, sizeof want, "%d.%d.%d", COLIO_VERSION_MAJOR, COLIO_VERSION_MINOR,
           COLIO_VERSION_PATCH);
  CHECK(strcmp(colio_version(), want) == 0);
}

static void test_config(void) {
  int64_t v = -1;
  if (!getenv("COLIO_NTHREADS")) {
    OK(colio_config_get_int("threads", &v));
    CHECK(v == 8);
  }
  int64_t old = 0;
  OK(colio_config_get_int("task_size", &old));
  OK(colio_config_set_int("task_size", 1 << 20));
  OK(colio_config_get_int("task_size", &v));
  CHECK(v == 1 << 20);
  OK(colio_config_set_int("task_size", old));
  OK(colio_config_get_int("small_read_threshold", &v));
  CHECK(v >= 0);
  OK(colio_config_get_int("small_write_threshold", &v));
  CHECK(v >= 0);
  OK(colio_config_get_int("bounce_buffer_size", &v));
  CHECK(v >= 4096);
}

/* Reads the whole source several ways and compares with ref. */
static void check_source(colio_source *src, const unsigned char *ref, int64_t size) {
  int64_t n = -1;
  OK(colio_source_size(src, &n));
  CHECK(n == size);

  unsigned char *buf = (unsigned char *)xmalloc((size_t)size + 100);
  /* Synchronous whole read, asking for more than exists. */
  memset(buf, 0xAA, (size_t)size + 100);
  OK(colio_read(src, buf, size + 100, 0, &n));
  CHECK(n == size);
  CHECK(memcmp(buf, ref, (size_t)size) == 0);
  CHECK(buf[size] == 0xAA); /* nothing written past the bytes that exist */

  /* A read that starts at the end reads 0 bytes. */
  OK(colio_read(src, buf, 10, size, &n));
  CHECK(n == 0);
  /* nread may be NULL. */
  OK(colio_read(src, buf, 10, 5, NULL));
  CHECK(memcmp(buf, ref + 5, 10) == 0);
  /* A zero-byte read needs no buffer. */
  OK(colio_read(src, NULL, 0, 0, &n));
  CHECK(n == 0);

  /* Async reads: small (inline for fast sources), large (split), tail. */
  int64_t offs[4] = {0, 7, size / 3, size - 1000};
  int64_t lens[4] = {100, 2 << 20, 4096, 1000};
  colio_future *f[4];
  memset(buf, 0, (size_t)size);
  for (int i = 0; i < 4; i++)
    OK(colio_read_async(src, buf + offs[i], lens[i], offs[i], &f[i]));
  for (int i = 0; i < 4; i++) {
    int64_t got = -1;
    OK(colio_future_wait(f[i], COLIO_WAIT_FOREVER, &got));
    CHECK(got == lens[i]);
    CHECK(colio_future_done(f[i]) == 1);
    CHECK(memcmp(buf + offs[i], ref + offs[i], (size_t)lens[i]) == 0);
    int64_t off = -1;
    OK(colio_future_offset(f[i], &off));
    CHECK(off == offs[i]);
    const char *msg = NULL;
    int en = -1;
    OK(colio_future_error(f[i], &msg, &en));
    CHECK(msg != NULL && msg[0] == '\0');
    CHECK(en == 0);
    OK(colio_future_free(f[i]));
  }

  /* Fan-out: 64 ranges covering the source in pieces. */
  enum { N = 64 };
  colio_range r[N];
  colio_future *fs[N];
  int64_t piece = size / N + 1;
  memset(buf, 0, (size_t)size);
  for (int i = 0; i < N; i++) {
    r[i].offset = i * piece;
    r[i].size = (i + 1) * piece > size ? size - i * piece : piece;
    r[i].buf = buf + r[i].offset;
  }
  OK(colio_readv_async(src, r, N, fs));
  for (int i = 0; i < N; i++) {
    int64_t got = -1;
    OK(colio_future_wait(fs[i], COLIO_WAIT_FOREVER, &got));
    CHECK(got == r[i].size);
    OK(colio_future_free(fs[i]));
  }
  CHECK(memcmp(buf, ref, (size_t)size) == 0);
  /* n == 0 is a valid, empty fan-out. */
  OK(colio_readv_async(src, NULL, 0, NULL));
  free(buf);
}

static void test_file_source(const unsigned char *ref) {
  char *path = temp_path("src");
  write_file(path, ref, FILE_SIZE);
  colio_source *src = NULL;
  OK(colio_source_open_file(path, &src));
  REQUIRE(src != NULL);
  check_source(src, ref, FILE_SIZE);
  OK(colio_source_free(src));
  OK(colio_source_free(NULL));
  unlink(path);
  free(path);
}

static void test_memory_source(const unsigned char *ref) {
  colio_source *src = NULL;
  OK(colio_source_from_memory(ref, FILE_SIZE, &src));
  REQUIRE(src != NULL);
  check_source(src, ref, FILE_SIZE);
  OK(colio_source_free(src));
  /* An empty memory source needs no data pointer. */
  OK(colio_source_from_memory(NULL, 0, &src));
  int64_t n = -1;
  OK(colio_source_size(src, &n));
  CHECK(n == 0);
  OK(colio_source_free(src));
}

/* A callback source over a buffer. It answers at most max_chunk bytes per
 * call (short reads), so colio must ask again for the rest. */
typedef struct {
  const unsigned char *data;
  int64_t size;
  int64_t max_chunk;
  int calls;    /* atomically updated */
  int releases; /* atomically updated */
} mem_ctx;

static int64_t mem_read(void *ctx, void *buf, int64_t size, int64_t offset) {
  mem_ctx *m = (mem_ctx *)ctx;
  __atomic_add_fetch(&m->calls, 1, __ATOMIC_SEQ_CST);
  if (offset >= m->size)
    return 0;
  int64_t n = size;
  if (n > m->size - offset)
    n = m->size - offset;
  if (n > m->max_chunk)
    n = m->max_chunk;
  memcpy(buf, m->data + offset, (size_t)n);
  return n;
}

static void mem_release(void *ctx) {
  mem_ctx *m = (mem_ctx *)ctx;
  __atomic_add_fetch(&m->releases, 1, __ATOMIC_SEQ_CST);
}

static void test_callback_source(const unsigned char *ref) {
  uint32_t flagsets[3] = {0, COLIO_CALLBACK_CONCURRENT,
                          COLIO_CALLBACK_CONCURRENT | COLIO_CALLBACK_FAST};
  for (int k = 0; k < 3; k++) {
    mem_ctx m;
    memset(&m, 0, sizeof m);
    m.data = ref;
    m.size = FILE_SIZE;
    m.max_chunk = 300000;
    colio_source_callbacks cb;
    memset(&cb, 0, sizeof cb);
    cb.struct_size = sizeof cb;
    cb.ctx = &m;
    cb.read = mem_read;
    cb.release = mem_release;
    cb.flags = flagsets[k];
    colio_source *src = NULL;
    OK(colio_source_from_callbacks(&cb, FILE_SIZE, &src));
    REQUIRE(src != NULL);
    check_source(src, ref, FILE_SIZE);
    CHECK(__atomic_load_n(&m.calls, __ATOMIC_SEQ_CST) > 0);
    CHECK(__atomic_load_n(&m.releases, __ATOMIC_SEQ_CST) == 0);
    OK(colio_source_free(src));
    CHECK(__atomic_load_n(&m.releases, __ATOMIC_SEQ_CST) == 1);
  }

  /* A struct from a newer header (larger struct_size) is accepted; the
   * fields this library does not know are ignored. */
  struct {
    colio_source_callbacks cb;
    int64_t future_field;
  } big;
  memset(&big, 0, sizeof big);
  mem_ctx m;
  memset(&m, 0, sizeof m);
  m.data = ref;
  m.size = 1000;
  m.max_chunk = 1000;
  big.cb.struct_size = sizeof big;
  big.cb.ctx = &m;
  big.cb.read = mem_read;
  big.cb.release = mem_release;
  big.future_field = 42;
  colio_source *src = NULL;
  OK(colio_source_from_callbacks(&big.cb, 1000, &src));
  unsigned char tmp[1000];
  int64_t n = -1;
  OK(colio_read(src, tmp, 1000, 0, &n));
  CHECK(n == 1000 && memcmp(tmp, ref, 1000) == 0);
  OK(colio_source_free(src));
  CHECK(m.releases == 1);
}

/* ---- sinks --------------------------------------------------------------- */

static void test_file_sink(const unsigned char *ref) {
  char *path = temp_path("sink");
  colio_sink *s = NULL;
  OK(colio_sink_open_file(path, COLIO_SINK_CREATE | COLIO_SINK_TRUNCATE, &s));
  REQUIRE(s != NULL);
  /* Positional writes, out of order, small and large. */
  int64_t half = FILE_SIZE / 2;
  colio_future *f1 = NULL, *f2 = NULL;
  OK(colio_write_async(s, ref + half, FILE_SIZE - half, half, &f1));
  OK(colio_write_async(s, ref, half, 0, &f2));
  int64_t n = -1;
  OK(colio_future_wait(f1, COLIO_WAIT_FOREVER, &n));
  CHECK(n == FILE_SIZE - half);
  OK(colio_future_wait(f2, COLIO_WAIT_FOREVER, &n));
  CHECK(n == half);
  OK(colio_future_free(f1));
  OK(colio_future_free(f2));
  /* Appends are reserved in call order, after offset 0 (not after the
   * positional writes: appends start at 0 without COLIO_SINK_APPEND). */
  OK(colio_sink_size(s, &n));
  CHECK(n == FILE_SIZE);
  OK(colio_write(s, ref, 10, 0, &n));
  CHECK(n == 10);
  OK(colio_sink_flush(s, 1));
  OK(colio_sink_flush(s, 0));
  OK(colio_sink_free(s));

  int fd = open(path, O_RDONLY);
  REQUIRE(fd >= 0);
  unsigned char *got = (unsigned char *)xmalloc(FILE_SIZE);
  CHECK(pread_all(fd, got, FILE_SIZE + 1, 0) == FILE_SIZE);
  CHECK(memcmp(got, ref, FILE_SIZE) == 0);
  close(fd);

  /* COLIO_SINK_APPEND: appends go after the existing bytes, in call order;
   * each future knows its offset. */
  OK(colio_sink_open_file(path, COLIO_SINK_APPEND, &s));
  OK(colio_sink_size(s, &n));
  CHECK(n == FILE_SIZE);
  enum { K = 16 };
  colio_range r[K];
  colio_future *fs[K];
  for (int i = 0; i < K; i++) {
    r[i].offset = COLIO_APPEND;
    r[i].size = 1000 + i;
    r[i].buf = (void *)(ref + i * 5000);
  }
  OK(colio_writev_async(s, r, K, fs));
  int64_t expect = FILE_SIZE;
  for (int i = 0; i < K; i++) {
    int64_t off = -1;
    OK(colio_future_offset(fs[i], &off));
    CHECK(off == expect);
    OK(colio_future_wait(fs[i], COLIO_WAIT_FOREVER, &n));
    CHECK(n == r[i].size);
    OK(colio_future_free(fs[i]));
    expect += r[i].size;
  }
  colio_future *fa = NULL;
  OK(colio_write_async(s, ref, 5, COLIO_APPEND, &fa));
  int64_t off = -1;
  OK(colio_future_offset(fa, &off));
  CHECK(off == expect);
  OK(colio_future_free(fa));
  expect += 5;
  OK(colio_sink_size(s, &n));
  CHECK(n == expect);
  OK(colio_sink_free(s));

  fd = open(path, O_RDONLY);
  REQUIRE(fd >= 0);
  unsigned char chunk[2000];
  int64_t at = FILE_SIZE;
  for (int i = 0; i < K; i++) {
    CHECK(pread_all(fd, chunk, 1000 + i, at) == 1000 + i);
    CHECK(memcmp(chunk, ref + i * 5000, (size_t)(1000 + i)) == 0);
    at += 1000 + i;
  }
  CHECK(pread_all(fd, chunk, 100, at) == 5);
  close(fd);
  unlink(path);
  free(path);
  free(got);
}

static void test_memory_sink(const unsigned char *ref) {
  unsigned char *buf = (unsigned char *)xmalloc(FILE_SIZE);
  memset(buf, 0, FILE_SIZE);
  colio_sink *s = NULL;
  OK(colio_sink_from_memory(buf, FILE_SIZE, &s));
  colio_future *f[3];
  OK(colio_write_async(s, ref, 1000, COLIO_APPEND, &f[0]));
  OK(colio_write_async(s, ref + 1000, FILE_SIZE - 1000, COLIO_APPEND, &f[1]));
  for (int i = 0; i < 2; i++) {
    OK(colio_future_wait(f[i], COLIO_WAIT_FOREVER, NULL));
    OK(colio_future_free(f[i]));
  }
  CHECK(memcmp(buf, ref, FILE_SIZE) == 0);
  int64_t n = -1;
  OK(colio_sink_size(s, &n));
  CHECK(n == FILE_SIZE);
  /* A write that does not fit fails its future with COLIO_ENOSPC, and
   * the error is sticky: flush and free report it. */
  OK(colio_write_async(s, ref, 10, FILE_SIZE - 5, &f[2]));
  CHECK_RC(colio_future_wait(f[2], COLIO_WAIT_FOREVER, NULL), COLIO_ENOSPC);
  const char *msg = NULL;
  CHECK_RC(colio_future_error(f[2], &msg, NULL), COLIO_ENOSPC);
  CHECK(msg && strstr(msg, "does not fit"));
  OK(colio_future_free(f[2]));
  CHECK_ERR(colio_sink_flush(s, 0), COLIO_ENOSPC, "does not fit");
  CHECK_ERR(colio_sink_free(s), COLIO_ENOSPC, "does not fit");
  free(buf);
}

static void test_void_sink(const unsigned char *ref) {
  colio_sink *s = NULL;
  OK(colio_sink_void(&s));
  int64_t n = -1;
  OK(colio_write(s, ref, FILE_SIZE, COLIO_APPEND, &n));
  CHECK(n == FILE_SIZE);
  OK(colio_write(s, NULL, 0, COLIO_APPEND, &n));
  CHECK(n == 0);
  OK(colio_sink_size(s, &n));
  CHECK(n == FILE_SIZE);
  OK(colio_sink_free(s));
}

typedef struct {
  unsigned char *buf;
  int64_t cap;
  int64_t max_chunk;
  int flushes, fsyncs, releases;
  int fail_flush;
} sink_ctx;

static int64_t cb_write(void *ctx, const void *buf, int64_t size, int64_t offset) {
  sink_ctx *c = (sink_ctx *)ctx;
  if (offset + size > c->cap)
    return -ENOSPC;
  int64_t n = size < c->max_chunk ? size : c->max_chunk;
  memcpy(c->buf + offset, buf, (size_t)n);
  return n;
}

static int cb_flush(void *ctx, int fsync) {
  sink_ctx *c = (sink_ctx *)ctx;
  __atomic_add_fetch(&c->flushes, 1, __ATOMIC_SEQ_CST);
  if (fsync)
    __atomic_add_fetch(&c->fsyncs, 1, __ATOMIC_SEQ_CST);
  return c->fail_flush ? -EIO : 0;
}

static void cb_release(void *ctx) {
  sink_ctx *c = (sink_ctx *)ctx;
  __atomic_add_fetch(&c->releases, 1, __ATOMIC_SEQ_CST);
}

static void test_callback_sink(const unsigned char *ref) {
  sink_ctx c;
  memset(&c, 0, sizeof c);
  c.cap = FILE_SIZE + 100;
  c.buf = (unsigned char *)xmalloc((size_t)c.cap);
  c.max_chunk = 70000;
  colio_sink_callbacks cb;
  memset(&cb, 0, sizeof cb);
  cb.struct_size = sizeof cb;
  cb.ctx = &c;
  cb.write = cb_write;
  cb.flush = cb_flush;
  cb.release = cb_release;
  cb.flags = COLIO_CALLBACK_CONCURRENT;
  cb.append_start = 100;
  colio_sink *s = NULL;
  OK(colio_sink_from_callbacks(&cb, &s));
  REQUIRE(s != NULL);
  colio_future *f = NULL;
  OK(colio_write_async(s, ref, FILE_SIZE, COLIO_APPEND, &f));
  int64_t off = -1, n = -1;
  OK(colio_future_offset(f, &off));
  CHECK(off == 100);
  OK(colio_future_wait(f, COLIO_WAIT_FOREVER, &n));
  CHECK(n == FILE_SIZE);
  OK(colio_future_free(f));
  CHECK(memcmp(c.buf + 100, ref, FILE_SIZE) == 0);
  OK(colio_sink_flush(s, 1));
  CHECK(c.flushes == 1 && c.fsyncs == 1);
  /* A write the callback refuses fails its future with COLIO_ECALLBACK,
   * the negated errno it returned becomes the future's errno. */
  OK(colio_write_async(s, ref, 1000, FILE_SIZE, &f));
  CHECK_RC(colio_future_wait(f, COLIO_WAIT_FOREVER, NULL), COLIO_ECALLBACK);
  CHECK(colio_last_errno() == ENOSPC);
  const char *msg = NULL;
  int en = 0;
  CHECK_RC(colio_future_error(f, &msg, &en), COLIO_ECALLBACK);
  CHECK(en == ENOSPC);
  CHECK(msg && strstr(msg, "write callback failed"));
  OK(colio_future_free(f));
  CHECK_ERR(colio_sink_free(s), COLIO_ECALLBACK, "write callback failed");
  CHECK(c.releases == 1);

  /* A failing flush: COLIO_ECALLBACK with the errno. */
  free(c.buf);
  memset(&c, 0, sizeof c);
  c.cap = 100;
  c.buf = (unsigned char *)xmalloc(100);
  c.max_chunk = 100;
  c.fail_flush = 1;
  cb.ctx = &c;
  cb.flags = 0;
  cb.append_start = 0;
  OK(colio_sink_from_callbacks(&cb, &s));
  OK(colio_write(s, ref, 50, COLIO_APPEND, &n));
  CHECK(n == 50);
  CHECK_ERR(colio_sink_flush(s, 0), COLIO_ECALLBACK, "flush callback failed");
  CHECK(colio_last_errno() == EIO);
  CHECK_ERR(colio_sink_free(s), COLIO_ECALLBACK, "flush callback failed");
  CHECK(c.releases == 1);
  free(c.buf);
}

static void test_stats(void) {
  colio_counters st;
  memset(&st, 0, sizeof st);
  st.struct_size = sizeof st;
  OK(colio_stats(&st));
  CHECK(st.ops_submitted > 0);
  CHECK(st.bytes_read > 0);
  CHECK(st.bytes_written > 0);
  CHECK(st.tasks > 0);
  CHECK(st.peak_in_flight >= 1);
  CHECK(st.in_flight >= 0);
  CHECK(st.errors > 0); /* the failures provoked above */
  /* An older, shorter struct: only the fields it has are written. */
  struct {
    size_t struct_size;
    int64_t ops_submitted;
    int64_t ops_inline;
    int64_t canary;
  } old;
  old.struct_size = offsetof(colio_counters, tasks);
  old.canary = 0x5a5a5a5a;
  OK(colio_stats((colio_counters *)(void *)&old));
  CHECK(old.ops_submitted > 0);
  CHECK(old.canary == 0x5a5a5a5a);
}

int main(void) {
  watchdog(120);
  unsigned char *ref = (unsigned char *)xmalloc(FILE_SIZE);
  fill_pattern(ref, FILE_SIZE, 1);
  test_version();
  test_config();
  test_file_source(ref);
  test_memory_source(ref);
  test_callback_source(ref);
  test_file_sink(ref);
  test_memory_sink(ref);
  test_void_sink(ref);
  test_callback_sink(ref);
  test_stats();
  free(ref);
  return finish("basic");
}
