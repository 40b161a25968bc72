/*
 * pattern.h: the fixture of the batch tests (test_batch.c,
 * test_batch_packed.c, test_coalesce.c): SIZE bytes of a seeded pattern,
 * written to a temporary file, and two sources over the same bytes, the
 * file and a concurrent callback source that copies from memory, so that
 * every batch is checked on both paths against one reference (pread of
 * the file, or data[]).
 */
#ifndef COLIO_TEST_PATTERN_H
#define COLIO_TEST_PATTERN_H

#include "harness.h"

#define SIZE ((int64_t)1 << 20)

static unsigned char *data;
static int calls; /* cb_read calls (atomically updated) */

static int64_t cb_read(void *ctx, void *buf, int64_t size, int64_t off) {
  (void)ctx;
  __atomic_add_fetch(&calls, 1, __ATOMIC_SEQ_CST);
  if (off >= SIZE)
    return 0;
  int64_t n = size < SIZE - off ? size : SIZE - off;
  memcpy(buf, data + off, (size_t)n);
  return n;
}

/* xorshift64: the batches' offsets and sizes. */
static uint64_t rnd(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

struct pattern {
  char *path;
  int fd; /* the file, opened for pread */
  colio_source *file, *cb;
};

static void pattern_open(struct pattern *p, const char *tag, uint64_t seed) {
  data = (unsigned char *)xmalloc(SIZE);
  fill_pattern(data, SIZE, seed);
  p->path = temp_path(tag);
  write_file(p->path, data, SIZE);
  p->fd = open(p->path, O_RDONLY);
  REQUIRE(p->fd >= 0);
  OK(colio_source_open_file(p->path, &p->file));
  colio_source_callbacks c = {sizeof c, NULL, cb_read, NULL, COLIO_CALLBACK_CONCURRENT};
  REQUIRE(colio_source_from_callbacks(&c, SIZE, &p->cb) == COLIO_OK);
}

static void pattern_close(struct pattern *p) {
  OK(colio_source_free(p->file));
  OK(colio_source_free(p->cb));
  close(p->fd);
  unlink(p->path);
  free(p->path);
  free(data);
  data = NULL;
}

#endif
