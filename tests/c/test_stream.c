/*
 * test_stream.c: read-ahead streams from C. Reads of random sizes across a
 * file equal pread; seeks forward, backward, to and past the end; EOF like
 * a regular file; a callback source that returns short reads; an error at
 * a chosen offset that is sticky; free while another thread waits in a
 * read; bad arguments.
 */
#include "harness.h"

#define SIZE (5 * 1024 * 1024 + 321)
#define FAIL_AT (3 * 1024 * 1024 + 77)

static const unsigned char *g_data;
static int g_fail; /* fail reads that reach FAIL_AT */
static volatile int g_block; /* hold reads while set */

static int64_t short_read(void *ctx, void *buf, int64_t size, int64_t offset) {
  (void)ctx;
  while (__atomic_load_n(&g_block, __ATOMIC_SEQ_CST))
    sleep_ns(1000000);
  if (g_fail && offset >= FAIL_AT)
    return -EIO;
  int64_t n = size < 1000 ? size : 1000; /* at most 1000 bytes a call */
  if (g_fail && offset + n > FAIL_AT)
    n = FAIL_AT - offset;
  if (offset + n > SIZE)
    n = SIZE - offset;
  memcpy(buf, g_data + offset, (size_t)n);
  return n;
}

static colio_source *callback_source(void) {
  colio_source_callbacks cb;
  memset(&cb, 0, sizeof cb);
  cb.struct_size = sizeof cb;
  cb.read = short_read;
  cb.flags = COLIO_CALLBACK_CONCURRENT;
  colio_source *src = NULL;
  OK(colio_source_from_callbacks(&cb, SIZE, &src));
  return src;
}

/* Reads the whole stream in random-sized reads and compares. */
static void read_all(colio_stream *st, const unsigned char *want, int64_t from) {
  unsigned char *buf = (unsigned char *)xmalloc(3 * 1024 * 1024);
  int64_t pos = from;
  unsigned seed = 7;
  for (;;) {
    int64_t ask = 1 + rand_r(&seed) % (3 * 1024 * 1024);
    int64_t n = -1;
    OK(colio_stream_read(st, buf, ask, &n));
    if (n == 0)
      break;
    CHECK(n > 0 && n <= ask);
    if (memcmp(buf, want + pos, (size_t)n) != 0) {
      fprintf(stderr, "bytes differ at %lld\n", (long long)pos);
      t_failures++;
      break;
    }
    pos += n;
  }
  CHECK(pos == SIZE);
  int64_t n = -1;
  OK(colio_stream_read(st, buf, 10, &n)); /* EOF again, like a file */
  CHECK(n == 0);
  free(buf);
}

static void *free_later(void *arg) {
  sleep_ns(20000000);
  OK(colio_stream_free((colio_stream *)arg));
  return NULL;
}

int main(void) {
  watchdog(60);
  unsigned char *data = (unsigned char *)xmalloc(SIZE);
  fill_pattern(data, SIZE, 11);
  g_data = data;
  char *path = temp_path("stream");
  write_file(path, data, SIZE);

  /* A file, read whole with random sizes, then seeks. */
  colio_source *fsrc = NULL;
  OK(colio_source_open_file(path, &fsrc));
  colio_stream *st = NULL;
  OK(colio_stream_open(fsrc, 0, 256 * 1024, 3, &st));
  read_all(st, data, 0);
  int64_t pos = -1;
  OK(colio_stream_seek(st, 1000, SEEK_SET, &pos));
  CHECK(pos == 1000);
  unsigned char b[4096];
  int64_t n = 0;
  OK(colio_stream_read(st, b, sizeof b, &n));
  CHECK(n > 0 && memcmp(b, data + 1000, (size_t)n) == 0);
  OK(colio_stream_seek(st, 500000, SEEK_CUR, &pos)); /* forward */
  CHECK(pos == 1000 + n + 500000);
  OK(colio_stream_read(st, b, 100, &n));
  CHECK(n == 100 && memcmp(b, data + pos, 100) == 0);
  OK(colio_stream_seek(st, -100, SEEK_END, &pos));
  CHECK(pos == SIZE - 100);
  OK(colio_stream_read(st, b, sizeof b, &n));
  CHECK(n == 100 && memcmp(b, data + SIZE - 100, 100) == 0);
  OK(colio_stream_seek(st, SIZE + 10, SEEK_SET, &pos)); /* past the end */
  OK(colio_stream_read(st, b, 10, &n));
  CHECK(n == 0);
  OK(colio_stream_tell(st, &pos));
  CHECK(pos == SIZE + 10);
  CHECK_ERR(colio_stream_seek(st, -1, SEEK_SET, &pos), COLIO_EINVAL, "negative");
  CHECK_ERR(colio_stream_seek(st, 0, 7, &pos), COLIO_EINVAL, "whence");
  CHECK_ERR(colio_stream_read(st, NULL, 10, &n), COLIO_EINVAL, "NULL");
  OK(colio_stream_free(st));
  CHECK_ERR(colio_stream_tell(st, &pos), COLIO_EINVAL, "colio_stream");
  OK(colio_stream_free(NULL));

  /* Defaults, from an offset. */
  OK(colio_stream_open(fsrc, 12345, 0, 0, &st));
  unsigned char *rest = (unsigned char *)xmalloc(SIZE);
  int64_t got = 0;
  for (;;) {
    OK(colio_stream_read(st, rest + got, SIZE - got, &n));
    if (n == 0)
      break;
    got += n;
  }
  CHECK(got == SIZE - 12345 && memcmp(rest, data + 12345, (size_t)got) == 0);
  OK(colio_stream_free(st));
  free(rest);

  /* Bad arguments. */
  CHECK_ERR(colio_stream_open(fsrc, -1, 0, 0, &st), COLIO_EINVAL, "negative");
  CHECK(st == NULL);
  CHECK_ERR(colio_stream_open(fsrc, 0, -5, 0, &st), COLIO_EINVAL, "buffer_size");
  CHECK_ERR(colio_stream_open(NULL, 0, 0, 0, &st), COLIO_EINVAL, "colio_source");
  CHECK_ERR(colio_stream_open(fsrc, 0, 0, 0, NULL), COLIO_EINVAL, "NULL");
  CHECK_ERR(colio_stream_open((colio_source *)fsrc, 0, 0, 0, (colio_stream **)NULL), COLIO_EINVAL, "out");

  /* A callback source that returns at most 1000 bytes a call. */
  colio_source *csrc = callback_source();
  OK(colio_stream_open(csrc, 0, 300 * 1024, 2, &st));
  read_all(st, data, 0);
  OK(colio_stream_free(st));

  /* An error at FAIL_AT: the bytes before it, then the error, every time. */
  g_fail = 1;
  OK(colio_stream_open(csrc, 0, 512 * 1024, 2, &st));
  unsigned char *buf = (unsigned char *)xmalloc(SIZE);
  got = 0;
  int rc = COLIO_OK;
  for (;;) {
    rc = colio_stream_read(st, buf + got, 100000, &n);
    if (rc != COLIO_OK || n == 0)
      break;
    got += n;
  }
  CHECK(rc == COLIO_ECALLBACK);
  CHECK(got == FAIL_AT && memcmp(buf, data, (size_t)got) == 0);
  CHECK_RC(colio_stream_read(st, buf, 10, &n), COLIO_ECALLBACK);
  CHECK_RC(colio_stream_read(st, buf, 10, &n), COLIO_ECALLBACK);
  OK(colio_stream_free(st));
  g_fail = 0;

  /* Free from another thread while a read waits on a held source. */
  __atomic_store_n(&g_block, 1, __ATOMIC_SEQ_CST);
  OK(colio_stream_open(csrc, 0, 0, 0, &st));
  pthread_t t;
  REQUIRE(pthread_create(&t, NULL, free_later, st) == 0);
  rc = colio_stream_read(st, buf, 10, &n);
  CHECK(rc == COLIO_ECLOSED || rc == COLIO_EINVAL); /* closed while waiting, or already freed */
  pthread_join(t, NULL);
  __atomic_store_n(&g_block, 0, __ATOMIC_SEQ_CST);

  free(buf);
  OK(colio_source_free(csrc));
  OK(colio_source_free(fsrc));
  unlink(path);
  free(path);
  free(data);
  return finish("streams (read-ahead)");
}
