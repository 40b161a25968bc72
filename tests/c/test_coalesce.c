/*
 * test_coalesce.c: colio_readv_async_ex with COLIO_READV_COALESCE (issue
 * 16). Random batches of overlapping, duplicate, adjacent, empty and
 * past-the-end ranges, read coalesced from a file (compared with pread)
 * and from a callback source (compared with the generator's bytes), with
 * the hole forced per source; the callback counts the requests it gets,
 * so the merge is seen from outside colio. Also: the settings' defaults,
 * their checks, and unknown flags.
 */
#include "pattern.h"

#define MAXN 48



/* One random batch read coalesced from src; ref is what each byte is. */
static void batch(colio_source *src, int ref_fd, uint64_t *seed) {
  colio_range r[MAXN];
  colio_future *fs[MAXN];
  int n = 1 + (int)(rnd(seed) % MAXN);
  for (int i = 0; i < n; i++) {
    int64_t off, len;
    switch (rnd(seed) % 5) {
    case 0: /* duplicate */
      if (i > 0) {
        int j = (int)(rnd(seed) % (uint64_t)i);
        off = r[j].offset, len = r[j].size;
        break;
      }
      /* fall through */
    case 1: /* adjacent */
      if (i > 0) {
        int j = (int)(rnd(seed) % (uint64_t)i);
        off = r[j].offset + r[j].size, len = (int64_t)(rnd(seed) % 5000);
        if (off > SIZE)
          off = SIZE;
        break;
      }
      /* fall through */
    case 2: off = (int64_t)(rnd(seed) % (uint64_t)(SIZE + 1)), len = 0; break; /* empty */
    case 3: off = SIZE - (int64_t)(rnd(seed) % 100), len = 200; break;          /* past the end */
    default: off = (int64_t)(rnd(seed) % (uint64_t)SIZE), len = (int64_t)(rnd(seed) % 70000); break;
    }
    r[i].offset = off;
    r[i].size = len;
    r[i].buf = xmalloc((size_t)len + 1);
  }
  REQUIRE(colio_readv_async_ex(src, r, n, COLIO_READV_COALESCE, fs) == COLIO_OK);
  unsigned char *want = (unsigned char *)xmalloc(70001);
  for (int i = 0; i < n; i++) {
    int64_t got = -1;
    OK(colio_future_wait(fs[i], COLIO_WAIT_FOREVER, &got));
    int64_t exp = r[i].offset + r[i].size <= SIZE ? r[i].size : SIZE - r[i].offset;
    CHECK(got == exp);
    if (ref_fd >= 0) {
      CHECK(pread_all(ref_fd, want, exp, r[i].offset) == exp);
    } else {
      memcpy(want, data + r[i].offset, (size_t)exp);
    }
    if (got == exp && memcmp(r[i].buf, want, (size_t)exp) != 0) {
      fprintf(stderr, "range %d (%lld+%lld): wrong bytes\n", i, (long long)r[i].offset,
              (long long)r[i].size);
      t_failures++;
    }
    colio_future_free(fs[i]);
    free(r[i].buf);
  }
  free(want);
}

int main(void) {
  watchdog(120);
  struct pattern P;
  pattern_open(&P, "coalesce", 16);
  colio_source *file = P.file, *cb = P.cb;
  int fd = P.fd;

  /* Defaults: a file merges only touching ranges, a callback source with
   * latency (not fast) starts at 1 MiB before it has measured anything. */
  int64_t hole = -5, max = -5;
  OK(colio_source_get_coalesce(file, &hole, &max));
  CHECK(hole == 0 && max == 32 << 20);
  OK(colio_source_get_coalesce(cb, &hole, NULL));
  CHECK(hole == 1 << 20);
  CHECK_ERR(colio_source_set_coalesce(cb, -2, -1), COLIO_EINVAL, "hole");
  CHECK_ERR(colio_source_set_coalesce(cb, -1, 0), COLIO_EINVAL, "cap");

  /* Ten ranges 1000 bytes apart under a 4 KiB hole: one request. */
  OK(colio_source_set_coalesce(cb, 4096, -1));
  colio_range r[10];
  colio_future *fs[10];
  for (int i = 0; i < 10; i++) {
    r[i].offset = 5000 * (int64_t)i, r[i].size = 4000, r[i].buf = xmalloc(4000);
  }
  calls = 0;
  OK(colio_readv_async_ex(cb, r, 10, COLIO_READV_COALESCE, fs));
  for (int i = 0; i < 10; i++) {
    OK(colio_future_wait(fs[i], COLIO_WAIT_FOREVER, NULL));
    CHECK(memcmp(r[i].buf, data + r[i].offset, 4000) == 0);
    colio_future_free(fs[i]);
  }
  CHECK(calls == 1);
  /* flags 0 is colio_readv_async: one request per range. */
  calls = 0;
  OK(colio_readv_async_ex(cb, r, 10, 0, fs));
  for (int i = 0; i < 10; i++) {
    OK(colio_future_wait(fs[i], COLIO_WAIT_FOREVER, NULL));
    colio_future_free(fs[i]);
  }
  CHECK(calls == 10);
  CHECK_ERR(colio_readv_async_ex(cb, r, 10, 0x80, fs), COLIO_EINVAL, "flags");
  r[3].offset = SIZE + 1; /* checked first: none starts */
  calls = 0;
  CHECK_RC(colio_readv_async_ex(cb, r, 10, COLIO_READV_COALESCE, fs), COLIO_EINVAL);
  CHECK(calls == 0);
  for (int i = 0; i < 10; i++)
    free(r[i].buf);

  uint64_t seed = 0x9e3779b97f4a7c15ull;
  int64_t holes[] = {0, 300, 100000};
  for (int h = 0; h < 3; h++) {
    OK(colio_source_set_coalesce(file, holes[h], 200000));
    OK(colio_source_set_coalesce(cb, holes[h], 200000));
    for (int k = 0; k < 40; k++) {
      batch(file, fd, &seed);
      batch(cb, -1, &seed);
    }
  }
  OK(colio_source_set_coalesce(cb, -1, -1));
  pattern_close(&P);
  return finish("test_coalesce");
}
