/*
 * test_short_reads.c: a read callback that stops (returns 0) before the
 * source's declared size. A short result is allowed only at the end of the
 * source; anywhere else the read fails with COLIO_EIO and a message naming
 * where the source stopped, the same whether the read fits in one task,
 * is split into several, runs inline, or is one range of a fan-out.
 *
 * Before the fix, a read that fit in one task succeeded short (the bytes
 * before the stop, COLIO_OK), while the same read split into several tasks
 * failed with COLIO_EIO: only the parts before the last were checked.
 */
#include "harness.h"

#define SIZE (1 << 20)
#define STOP 300000

static unsigned char *g_data;

static int64_t stopping_read(void *ctx, void *buf, int64_t size, int64_t offset) {
  (void)ctx;
  if (offset >= STOP)
    return 0; /* gave up: the declared size says there is more */
  int64_t n = STOP - offset < size ? STOP - offset : size;
  if (n > 1000)
    n = 1000; /* short answers before the stop are fine: colio asks again */
  memcpy(buf, g_data + offset, (size_t)n);
  return n;
}

static colio_source *stopping_source(uint32_t flags) {
  colio_source_callbacks cb;
  memset(&cb, 0, sizeof cb);
  cb.struct_size = sizeof cb;
  cb.read = stopping_read;
  cb.flags = flags;
  colio_source *src = NULL;
  OK(colio_source_from_callbacks(&cb, SIZE, &src));
  REQUIRE(src != NULL);
  return src;
}

/* rc and message of a read of n bytes at off that must fail alike. */
static void want_short(const char *how, int rc, const char *msg, int64_t n, int64_t off) {
  char want[160];
  snprintf(want, sizeof want, "read of %lld bytes at offset %lld got %lld: the source stopped at offset %d",
           (long long)n, (long long)off, (long long)(STOP - off), STOP);
  if (rc != COLIO_EIO || !msg || !strstr(msg, want)) {
    fprintf(stderr, "%s: returned %d with \"%s\"; want %d (COLIO_EIO) saying \"%s\"\n", how, rc,
            msg ? msg : "(null)", COLIO_EIO, want);
    t_failures++;
  }
}

static void check(colio_source *src, const char *kind, int64_t n, int64_t off) {
  char how[96];
  unsigned char *buf = (unsigned char *)xmalloc((size_t)n);
  int64_t got = -1;

  snprintf(how, sizeof how, "%s colio_read(%lld at %lld)", kind, (long long)n, (long long)off);
  int rc = colio_read(src, buf, n, off, &got);
  want_short(how, rc, colio_last_error(), n, off);

  snprintf(how, sizeof how, "%s colio_read_async(%lld at %lld)", kind, (long long)n, (long long)off);
  colio_future *f = NULL;
  OK(colio_read_async(src, buf, n, off, &f));
  rc = colio_future_wait(f, COLIO_WAIT_FOREVER, &got);
  const char *msg = NULL;
  colio_future_error(f, &msg, NULL);
  want_short(how, rc, msg, n, off);
  OK(colio_future_free(f));

  snprintf(how, sizeof how, "%s colio_readv_async(%lld at %lld)", kind, (long long)n, (long long)off);
  unsigned char head[100];
  colio_range r[2];
  colio_future *fs[2];
  r[0].offset = 0;
  r[0].size = sizeof head;
  r[0].buf = head;
  r[1].offset = off;
  r[1].size = n;
  r[1].buf = buf;
  OK(colio_readv_async(src, r, 2, fs));
  OK(colio_future_wait(fs[0], COLIO_WAIT_FOREVER, &got)); /* the range before the stop is fine */
  CHECK(got == (int64_t)sizeof head && memcmp(head, g_data, sizeof head) == 0);
  rc = colio_future_wait(fs[1], COLIO_WAIT_FOREVER, &got);
  colio_future_error(fs[1], &msg, NULL);
  want_short(how, rc, msg, n, off);
  OK(colio_future_free(fs[0]));
  OK(colio_future_free(fs[1]));
  free(buf);
}

int main(void) {
  watchdog(60);
  g_data = (unsigned char *)xmalloc(SIZE);
  fill_pattern(g_data, SIZE, 51);
  int64_t task_size = 0;
  OK(colio_config_get_int("task_size", &task_size));
  OK(colio_config_set_int("task_size", 64 << 10));

  uint32_t flags[2] = {COLIO_CALLBACK_CONCURRENT, COLIO_CALLBACK_CONCURRENT | COLIO_CALLBACK_FAST};
  const char *kinds[2] = {"slow", "fast"};
  for (int k = 0; k < 2; k++) {
    colio_source *src = stopping_source(flags[k]);
    check(src, kinds[k], 4000, STOP - 100);   /* small: inline for the fast one */
    check(src, kinds[k], 40000, STOP - 1000); /* one task */
    check(src, kinds[k], 700000, 0);          /* eleven tasks */
    /* A read that ends at the stop, or before it, is whole. */
    unsigned char *buf = (unsigned char *)xmalloc(STOP);
    int64_t got = -1;
    OK(colio_read(src, buf, STOP, 0, &got));
    CHECK(got == STOP && memcmp(buf, g_data, STOP) == 0);
    free(buf);
    OK(colio_source_free(src));
  }
  OK(colio_config_set_int("task_size", task_size));
  free(g_data);
  return finish("test_short_reads");
}
