/* example.c: copy a file with colio, reading 4 ranges at once and writing
 * them back as they arrive. Build: cc example.c $(pkg-config --cflags --libs colio) */
#include <colio.h>
#include <stdio.h>
#include <stdlib.h>

#define PARTS 4

static int fail(const char *what) {
  fprintf(stderr, "%s: %s (errno %d)\n", what, colio_last_error(), colio_last_errno());
  return 1;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s SOURCE DEST\n", argv[0]);
    return 2;
  }
  colio_source *src = NULL;
  colio_sink *dst = NULL;
  int64_t size = 0;
  if (colio_source_open_file(argv[1], &src) != COLIO_OK) return fail("open source");
  if (colio_source_size(src, &size) != COLIO_OK) return fail("size");
  if (colio_sink_open_file(argv[2], COLIO_SINK_CREATE | COLIO_SINK_TRUNCATE, &dst) != COLIO_OK)
    return fail("open destination");

  /* One buffer, PARTS ranges: every read starts now, in parallel. */
  char *buf = (char *)malloc(size > 0 ? (size_t)size : 1);
  colio_range ranges[PARTS];
  colio_future *reads[PARTS], *writes[PARTS];
  int64_t part = (size + PARTS - 1) / PARTS;
  for (int i = 0; i < PARTS; i++) {
    int64_t off = i * part < size ? i * part : size;
    ranges[i].offset = off;
    ranges[i].size = off + part <= size ? part : size - off;
    ranges[i].buf = buf + off;
  }
  if (!buf || colio_readv_async(src, ranges, PARTS, reads) != COLIO_OK) return fail("read");

  int status = 0;
  for (int i = 0; i < PARTS; i++) {
    int64_t n = 0;
    int rc = colio_future_wait(reads[i], COLIO_WAIT_FOREVER, &n);
    if (rc != COLIO_OK) status = fail("read part"); /* the future's message */
    colio_future_free(reads[i]);
    /* Write the part where it came from; the write starts at once too. */
    if (colio_write_async(dst, ranges[i].buf, n, ranges[i].offset, &writes[i]) != COLIO_OK)
      return fail("write");
  }
  for (int i = 0; i < PARTS; i++) {
    if (colio_future_wait(writes[i], COLIO_WAIT_FOREVER, NULL) != COLIO_OK)
      status = fail("write part");
    colio_future_free(writes[i]); /* waits if still running: buf stays ours */
  }
  if (colio_sink_free(dst) != COLIO_OK) status = fail("close destination");
  colio_source_free(src);
  free(buf);
  return status;
}
