/*
 * test_errors.c: every kind of bad input returns its code and a message
 * that says what was wrong; freed, stale, forged and wrong-type handles
 * are refused without a crash.
 */
#include "harness.h"

static unsigned char data[4096];

static int64_t failing_read(void *ctx, void *buf, int64_t size, int64_t offset) {
  (void)ctx;
  (void)buf;
  (void)size;
  return offset >= 2048 ? -EIO : -100000; /* an errno, then not one */
}

static int64_t ok_read(void *ctx, void *buf, int64_t size, int64_t offset) {
  (void)ctx;
  memset(buf, 1, (size_t)size);
  (void)offset;
  return size;
}

static int64_t too_much_read(void *ctx, void *buf, int64_t size, int64_t offset) {
  (void)ctx;
  (void)buf;
  (void)offset;
  return size + 1;
}

static int64_t ok_write(void *ctx, const void *buf, int64_t size, int64_t offset) {
  (void)ctx;
  (void)buf;
  (void)offset;
  return size;
}

static int64_t zero_write(void *ctx, const void *buf, int64_t size, int64_t offset) {
  (void)ctx;
  (void)buf;
  (void)size;
  (void)offset;
  return 0;
}

static void noop_done(void *ctx, colio_future *f, int status, int64_t n) {
  (void)ctx;
  (void)f;
  (void)status;
  (void)n;
}

static void test_arguments(void) {
  colio_source *src = NULL;
  colio_sink *snk = NULL;
  colio_future *fut = NULL;
  int64_t n = 0;
  unsigned char buf[64];

  /* Required out-pointers. */
  CHECK_ERR(colio_source_open_file("/tmp", NULL), COLIO_EINVAL, "out is NULL");
  CHECK_ERR(colio_source_from_memory(data, 10, NULL), COLIO_EINVAL, "out is NULL");
  CHECK_ERR(colio_sink_void(NULL), COLIO_EINVAL, "out is NULL");
  CHECK_ERR(colio_config_get_int("threads", NULL), COLIO_EINVAL, "out is NULL");
  CHECK_ERR(colio_stats(NULL), COLIO_EINVAL, "out is NULL");

  /* Paths. */
  src = (colio_source *)1;
  CHECK_ERR(colio_source_open_file(NULL, &src), COLIO_EINVAL, "path is NULL");
  CHECK(src == NULL); /* *out is NULL after a failure */
  CHECK_ERR(colio_source_open_file("", &src), COLIO_EINVAL, "empty path");
  CHECK_ERR(colio_source_open_file("/nonexistent/colio/file", &src), COLIO_ENOTFOUND,
            "/nonexistent/colio/file");
  CHECK(colio_last_errno() == ENOENT);
  CHECK_ERR(colio_source_open_file("/tmp", &src), COLIO_EINVAL, "directory");
  CHECK_ERR(colio_sink_open_file("/nonexistent/dir/x", COLIO_SINK_CREATE, &snk), COLIO_ENOTFOUND,
            "/nonexistent/dir/x");
  CHECK(colio_last_errno() == ENOENT);
  CHECK_ERR(colio_sink_open_file("/tmp/x", 64, &snk), COLIO_EINVAL, "unknown flags");
  CHECK_ERR(colio_sink_open_file("/tmp/x", COLIO_SINK_TRUNCATE | COLIO_SINK_APPEND, &snk),
            COLIO_EINVAL, "truncate and append");
  CHECK_ERR(colio_sink_open_file(NULL, 0, &snk), COLIO_EINVAL, "path is NULL");
  CHECK(snk == NULL);

  /* Memory sources and sinks. */
  CHECK_ERR(colio_source_from_memory(data, -1, &src), COLIO_EINVAL, "negative");
  CHECK_ERR(colio_source_from_memory(NULL, 10, &src), COLIO_EINVAL, "data is NULL");
  CHECK_ERR(colio_source_from_memory((void *)(uintptr_t)(UINTPTR_MAX - 10), 100, &src),
            COLIO_EINVAL, "address space");
  CHECK_ERR(colio_sink_from_memory(NULL, 10, &snk), COLIO_EINVAL, "buf is NULL");
  CHECK_ERR(colio_sink_from_memory(buf, -5, &snk), COLIO_EINVAL, "negative");

  /* Settings. */
  CHECK_ERR(colio_config_set_int("no_such_key", 1), COLIO_EINVAL, "unknown setting");
  CHECK_ERR(colio_config_get_int("no_such_key", &n), COLIO_EINVAL, "unknown setting");
  CHECK_ERR(colio_config_set_int(NULL, 1), COLIO_EINVAL, "key is NULL");
  CHECK_ERR(colio_config_set_int("threads", 0), COLIO_EINVAL, "threads");
  CHECK_ERR(colio_config_set_int("threads", -3), COLIO_EINVAL, "must be between");
  CHECK_ERR(colio_config_set_int("task_size", 0), COLIO_EINVAL, "task_size");
  CHECK_ERR(colio_config_set_int("small_read_threshold", -1), COLIO_EINVAL, "negative");
  CHECK_ERR(colio_config_set_int("bounce_buffer_size", 10), COLIO_EINVAL, "4096");
  colio_counters st;
  memset(&st, 0, sizeof st);
  CHECK_ERR(colio_stats(&st), COLIO_EINVAL, "struct_size");

  /* Callback structs. */
  colio_source_callbacks scb;
  memset(&scb, 0, sizeof scb);
  scb.struct_size = sizeof scb;
  CHECK_ERR(colio_source_from_callbacks(NULL, 10, &src), COLIO_EINVAL, "cb is NULL");
  CHECK_ERR(colio_source_from_callbacks(&scb, 10, &src), COLIO_EINVAL, "read is NULL");
  scb.read = ok_read;
  scb.struct_size = 8;
  CHECK_ERR(colio_source_from_callbacks(&scb, 10, &src), COLIO_EINVAL, "struct_size");
  scb.struct_size = 0;
  CHECK_ERR(colio_source_from_callbacks(&scb, 10, &src), COLIO_EINVAL, "struct_size");
  scb.struct_size = sizeof scb;
  scb.flags = 0x100;
  CHECK_ERR(colio_source_from_callbacks(&scb, 10, &src), COLIO_EINVAL, "unknown callback flags");
  scb.flags = 0;
  CHECK_ERR(colio_source_from_callbacks(&scb, -1, &src), COLIO_EINVAL, "negative");
  CHECK(src == NULL);
  colio_sink_callbacks kcb;
  memset(&kcb, 0, sizeof kcb);
  kcb.struct_size = sizeof kcb;
  CHECK_ERR(colio_sink_from_callbacks(&kcb, &snk), COLIO_EINVAL, "write is NULL");
  kcb.write = ok_write;
  kcb.append_start = -1;
  CHECK_ERR(colio_sink_from_callbacks(&kcb, &snk), COLIO_EINVAL, "append_start");
  kcb.append_start = 0;
  kcb.struct_size = sizeof kcb - 1;
  CHECK_ERR(colio_sink_from_callbacks(&kcb, &snk), COLIO_EINVAL, "struct_size");
  CHECK_ERR(colio_sink_from_callbacks(NULL, &snk), COLIO_EINVAL, "cb is NULL");

  /* Reads. */
  OK(colio_source_from_memory(data, sizeof data, &src));
  CHECK_ERR(colio_read(src, buf, -1, 0, &n), COLIO_EINVAL, "negative");
  CHECK_ERR(colio_read(src, buf, 10, -1, &n), COLIO_EINVAL, "negative");
  CHECK_ERR(colio_read(src, NULL, 10, 0, &n), COLIO_EINVAL, "buf is NULL");
  CHECK_ERR(colio_read(src, buf, 10, INT64_MAX - 5, &n), COLIO_EINVAL, "overflows");
  CHECK_ERR(colio_read(src, buf, 10, sizeof data + 1, &n), COLIO_EINVAL, "past the end");
  CHECK_ERR(colio_read_async(src, buf, 10, 0, NULL), COLIO_EINVAL, "out is NULL");
  fut = (colio_future *)1;
  CHECK_ERR(colio_read_async(src, buf, 10, -7, &fut), COLIO_EINVAL, "negative");
  CHECK(fut == NULL);
  /* readv: one bad range fails the call and starts none. */
  colio_range r[3];
  colio_future *fs[3];
  for (int i = 0; i < 3; i++) {
    r[i].offset = i * 10;
    r[i].size = 10;
    r[i].buf = buf + i * 10;
    fs[i] = (colio_future *)1;
  }
  r[2].size = -1;
  colio_counters before, after;
  memset(&before, 0, sizeof before);
  before.struct_size = sizeof before;
  after = before;
  OK(colio_stats(&before));
  CHECK_ERR(colio_readv_async(src, r, 3, fs), COLIO_EINVAL, "range 2");
  OK(colio_stats(&after));
  CHECK(after.ops_submitted == before.ops_submitted);
  CHECK(fs[0] == NULL && fs[1] == NULL && fs[2] == NULL);
  r[2].size = 10;
  r[1].buf = NULL;
  CHECK_ERR(colio_readv_async(src, r, 3, fs), COLIO_EINVAL, "range 1: buf is NULL");
  CHECK_ERR(colio_readv_async(src, r, -1, fs), COLIO_EINVAL, "negative");
  CHECK_ERR(colio_readv_async(src, NULL, 3, fs), COLIO_EINVAL, "ranges is NULL");
  CHECK_ERR(colio_readv_async(src, r, 3, NULL), COLIO_EINVAL, "futures_out is NULL");
  CHECK_ERR(colio_readv_async(src, r, (int64_t)1 << 40, fs), COLIO_EINVAL, "more ranges");
  OK(colio_source_free(src));

  /* Callback failures fail that future only. */
  memset(&scb, 0, sizeof scb);
  scb.struct_size = sizeof scb;
  scb.read = failing_read;
  OK(colio_source_from_callbacks(&scb, 4096, &src));
  CHECK_ERR(colio_read(src, buf, 10, 3000, &n), COLIO_ECALLBACK, "read callback failed at offset 3000");
  CHECK(colio_last_errno() == EIO);
  CHECK_ERR(colio_read(src, buf, 10, 0, &n), COLIO_ECALLBACK, "returned -100000");
  CHECK(colio_last_errno() == 0);
  OK(colio_read(src, buf, 0, 0, &n)); /* the source still works */
  OK(colio_source_free(src));
  scb.read = too_much_read;
  OK(colio_source_from_callbacks(&scb, 4096, &src));
  CHECK_ERR(colio_read(src, buf, 10, 0, &n), COLIO_ECALLBACK, "returned 11");
  OK(colio_source_free(src));

  /* Writes. */
  unsigned char out[100];
  OK(colio_sink_from_memory(out, sizeof out, &snk));
  CHECK_ERR(colio_write(snk, buf, -1, 0, &n), COLIO_EINVAL, "negative");
  CHECK_ERR(colio_write(snk, buf, 10, -2, &n), COLIO_EINVAL, "COLIO_APPEND");
  CHECK_ERR(colio_write(snk, NULL, 10, 0, &n), COLIO_EINVAL, "buf is NULL");
  CHECK_ERR(colio_write(snk, buf, 10, INT64_MAX - 2, &n), COLIO_EINVAL, "overflows");
  CHECK_ERR(colio_write_async(snk, buf, 10, 0, NULL), COLIO_EINVAL, "out is NULL");
  r[0].offset = -5;
  CHECK_ERR(colio_writev_async(snk, r, 1, fs), COLIO_EINVAL, "range 0: offset");
  CHECK_ERR(colio_sink_size(snk, NULL), COLIO_EINVAL, "out is NULL");
  OK(colio_sink_free(snk));
  memset(&kcb, 0, sizeof kcb);
  kcb.struct_size = sizeof kcb;
  kcb.write = zero_write;
  OK(colio_sink_from_callbacks(&kcb, &snk));
  CHECK_ERR(colio_write(snk, buf, 10, 0, &n), COLIO_ECALLBACK, "returned 0");
  CHECK_ERR(colio_sink_free(snk), COLIO_ECALLBACK, "returned 0");

  /* Futures. */
  OK(colio_source_from_memory(data, sizeof data, &src));
  OK(colio_read_async(src, buf, 10, 0, &fut));
  CHECK_ERR(colio_future_wait(fut, -2, &n), COLIO_EINVAL, "COLIO_WAIT_FOREVER");
  CHECK_ERR(colio_future_on_done(fut, NULL, NULL), COLIO_EINVAL, "cb is NULL");
  OK(colio_future_on_done(fut, noop_done, NULL));
  CHECK_ERR(colio_future_on_done(fut, noop_done, NULL), COLIO_EINVAL, "already has");
  CHECK_ERR(colio_future_offset(fut, NULL), COLIO_EINVAL, "out is NULL");
  OK(colio_future_free(fut));
  OK(colio_future_free(NULL));
  OK(colio_source_free(src));
}

/* A handle used after free, a stale one, a forged one and one of the wrong
 * type all fail with COLIO_EINVAL and a message saying which. */
static void test_handles(void) {
  colio_source *src = NULL;
  colio_sink *snk = NULL;
  colio_future *fut = NULL;
  unsigned char buf[16];
  int64_t n = 0;

  OK(colio_source_from_memory(data, sizeof data, &src));
  OK(colio_sink_void(&snk));
  OK(colio_read_async(src, buf, 16, 0, &fut));

  /* Wrong type: the same integer passed as the wrong handle type. */
  CHECK_ERR(colio_read(((colio_source *)(void *)snk), buf, 1, 0, &n), COLIO_EINVAL,
            "colio_sink* handle");
  CHECK_ERR(colio_write((colio_sink *)(void *)src, buf, 1, 0, &n), COLIO_EINVAL,
            "colio_source* handle");
  CHECK_ERR(colio_future_wait((colio_future *)(void *)src, 0, &n), COLIO_EINVAL,
            "colio_source* handle");
  CHECK_ERR(colio_source_free((colio_source *)(void *)fut), COLIO_EINVAL, "colio_future* handle");

  /* Forged. */
  CHECK_ERR(colio_read((colio_source *)0x1234, buf, 1, 0, &n), COLIO_EINVAL, "not a colio handle");
  CHECK_ERR(colio_read((colio_source *)(uintptr_t)-1, buf, 1, 0, &n), COLIO_EINVAL,
            "not a colio handle");
  CHECK_ERR(colio_read((colio_source *)buf, buf, 1, 0, &n), COLIO_EINVAL, "not a colio handle");
  CHECK_ERR(colio_read(NULL, buf, 1, 0, &n), COLIO_EINVAL, "NULL");
  CHECK_ERR(colio_sink_flush(NULL, 0), COLIO_EINVAL, "NULL");
  CHECK_ERR(colio_future_done(NULL), COLIO_EINVAL, "NULL");
  CHECK_ERR(colio_source_size((colio_source *)((uintptr_t)src + 1), &n), COLIO_EINVAL,
            "colio_source");

  /* Freed. */
  colio_future *freed = fut;
  OK(colio_future_free(fut));
  OK(colio_source_free(src));
  OK(colio_sink_free(snk));
  CHECK_ERR(colio_read(src, buf, 1, 0, &n), COLIO_EINVAL, "already freed");
  CHECK_ERR(colio_read_async(src, buf, 1, 0, &fut), COLIO_EINVAL, "already freed");
  CHECK(fut == NULL);
  fut = freed;
  CHECK_ERR(colio_source_size(src, &n), COLIO_EINVAL, "already freed");
  CHECK_ERR(colio_source_free(src), COLIO_EINVAL, "already freed");
  CHECK_ERR(colio_write(snk, buf, 1, 0, &n), COLIO_EINVAL, "already freed");
  CHECK_ERR(colio_sink_free(snk), COLIO_EINVAL, "already freed");
  CHECK_ERR(colio_future_wait(fut, 0, &n), COLIO_EINVAL, "already freed");
  CHECK_ERR(colio_future_done(fut), COLIO_EINVAL, "already freed");
  CHECK_ERR(colio_future_free(fut), COLIO_EINVAL, "already freed");
  CHECK_ERR(colio_future_cancel(fut, NULL), COLIO_EINVAL, "already freed");
  CHECK_ERR(colio_future_error(fut, NULL, NULL), COLIO_EINVAL, "already freed");

  /* Stale: the slot was reused by a new handle, the old token still fails. */
  colio_source *src2 = NULL;
  OK(colio_source_from_memory(data, sizeof data, &src2));
  CHECK(src2 != src);
  CHECK_ERR(colio_read(src, buf, 1, 0, &n), COLIO_EINVAL, "already freed");
  OK(colio_read(src2, buf, 1, 0, &n));
  OK(colio_source_free(src2));
}

/* The last error is per thread: a failure on another thread does not
 * change this thread's message. */
static void *fail_on_thread(void *arg) {
  (void)arg;
  int rc = colio_config_set_int("other_thread_key", 1);
  return (void *)(intptr_t)(rc == COLIO_EINVAL && strstr(colio_last_error(), "other_thread_key"));
}

static void test_thread_local_error(void) {
  CHECK_ERR(colio_config_set_int("this_thread_key", 1), COLIO_EINVAL, "this_thread_key");
  pthread_t t;
  void *ok = NULL;
  REQUIRE(pthread_create(&t, NULL, fail_on_thread, NULL) == 0);
  pthread_join(t, &ok);
  CHECK(ok != NULL);
  CHECK(strstr(colio_last_error(), "this_thread_key") != NULL);
  /* A successful call leaves it alone: it describes the last failure. */
  int64_t v;
  OK(colio_config_get_int("threads", &v));
  CHECK(strstr(colio_last_error(), "this_thread_key") != NULL);
}

int main(void) {
  watchdog(60);
  /* A new thread starts with no error. */
  CHECK(colio_last_error() != NULL && colio_last_error()[0] == '\0');
  CHECK(colio_last_errno() == 0);
  test_arguments();
  test_handles();
  test_thread_local_error();
  return finish("errors");
}
