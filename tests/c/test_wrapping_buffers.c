/*
 * test_wrapping_buffers.c: a buffer whose address range wraps around the
 * end of the address space (buf + size overflows) is one argument error,
 * COLIO_EINVAL with the same message, on every path that takes a host
 * buffer: the synchronous read's C fast path (file and memory sources),
 * the Go path (larger reads, callback sources), async and fan-out reads,
 * writes, streams, and device transfers.
 *
 * Before the fix, colio_read served small reads of file and memory sources
 * in C without the check: a file source returned COLIO_EIO (pread's
 * EFAULT) and a memory source crashed the process with SIGSEGV (memcpy
 * into the wrapped range), while the Go path said COLIO_EINVAL.
 */
#include "harness.h"

#define SIZE (1 << 20)
#define WANT "address space"

static int64_t cb_read(void *ctx, void *buf, int64_t size, int64_t offset) {
  memcpy(buf, (const unsigned char *)ctx + offset, (size_t)size);
  return size;
}

/* The last 16 bytes of the address space: any size above 16 wraps. */
static void *wrapping(void) { return (void *)(uintptr_t)(UINTPTR_MAX - 15); }

static void check_source(colio_source *src) {
  void *bad = wrapping();
  int64_t n = -1;
  colio_future *f = NULL;
  /* Small (the C fast path for files and memory) and large (Go). */
  CHECK_ERR(colio_read(src, bad, 4096, 0, &n), COLIO_EINVAL, WANT);
  CHECK(n == 0);
  CHECK_ERR(colio_read(src, bad, 64, SIZE - 10, &n), COLIO_EINVAL, WANT); /* crosses the end */
  CHECK_ERR(colio_read(src, bad, 512 << 10, 0, &n), COLIO_EINVAL, WANT);
  CHECK_ERR(colio_read_async(src, bad, 4096, 0, &f), COLIO_EINVAL, WANT);
  CHECK(f == NULL);
  colio_range r[2];
  colio_future *fs[2] = {NULL, NULL};
  unsigned char ok[64];
  r[0].offset = 0;
  r[0].size = sizeof ok;
  r[0].buf = ok;
  r[1].offset = 100;
  r[1].size = 4096;
  r[1].buf = bad;
  CHECK_ERR(colio_readv_async(src, r, 2, fs), COLIO_EINVAL, WANT);
  CHECK(fs[0] == NULL && fs[1] == NULL);
  colio_stream *st = NULL;
  OK(colio_stream_open(src, 0, 0, 0, &st));
  CHECK_ERR(colio_stream_read(st, bad, 4096, &n), COLIO_EINVAL, WANT);
  OK(colio_stream_free(st));
  /* The source still serves good buffers afterwards. */
  OK(colio_read(src, ok, sizeof ok, 0, &n));
  CHECK(n == (int64_t)sizeof ok);
  /* Device transfers check their pointer the same way where CUDA is. */
  int rc = colio_read_device_async(src, bad, 4096, 0, &f);
  CHECK(rc == COLIO_EINVAL || (rc == COLIO_ENOTSUP && colio_has_cuda() != 1));
}

static void check_sink(colio_sink *snk) {
  void *bad = wrapping();
  int64_t n = -1;
  colio_future *f = NULL;
  CHECK_ERR(colio_write(snk, bad, 4096, 0, &n), COLIO_EINVAL, WANT);
  CHECK_ERR(colio_write(snk, bad, 512 << 10, COLIO_APPEND, &n), COLIO_EINVAL, WANT);
  CHECK_ERR(colio_write_async(snk, bad, 4096, 0, &f), COLIO_EINVAL, WANT);
  colio_range r;
  colio_future *fs[1] = {NULL};
  r.offset = 0;
  r.size = 4096;
  r.buf = bad;
  CHECK_ERR(colio_writev_async(snk, &r, 1, fs), COLIO_EINVAL, WANT);
  int rc = colio_write_device_async(snk, bad, 4096, 0, &f);
  CHECK(rc == COLIO_EINVAL || (rc == COLIO_ENOTSUP && colio_has_cuda() != 1));
}

int main(void) {
  watchdog(60);
  unsigned char *data = (unsigned char *)xmalloc(SIZE);
  fill_pattern(data, SIZE, 41);
  char *path = temp_path("wrap");
  write_file(path, data, SIZE);

  colio_source *src = NULL;
  OK(colio_source_open_file(path, &src));
  check_source(src);
  OK(colio_source_free(src));

  colio_source_callbacks cb;
  memset(&cb, 0, sizeof cb);
  cb.struct_size = sizeof cb;
  cb.ctx = data;
  cb.read = cb_read;
  cb.flags = COLIO_CALLBACK_CONCURRENT | COLIO_CALLBACK_FAST;
  OK(colio_source_from_callbacks(&cb, SIZE, &src));
  check_source(src);
  OK(colio_source_free(src));

  /* Last: before the fix this one crashed the process. */
  OK(colio_source_from_memory(data, SIZE, &src));
  check_source(src);
  OK(colio_source_free(src));

  unsigned char *out = (unsigned char *)xmalloc(SIZE);
  colio_sink *snk = NULL;
  OK(colio_sink_from_memory(out, SIZE, &snk));
  check_sink(snk);
  OK(colio_sink_free(snk));
  OK(colio_sink_open_file(path, COLIO_SINK_TRUNCATE, &snk));
  check_sink(snk);
  OK(colio_sink_free(snk));

  unlink(path);
  free(path);
  free(out);
  free(data);
  return finish("test_wrapping_buffers");
}
