/*
 * test_batch_packed.c: colio_readv_packed (issue 15), the batch whose
 * buffers lie end to end in one. Random batches (one range, small,
 * 10,000 ranges; empty ranges, ranges at and past the end) of a file
 * (compared with pread) and of a callback source (compared with the
 * generator's bytes), blocking and started; the bytes of each range land
 * at the sum of the sizes before it and nothing is written past them; bad
 * arguments start nothing. The call did not exist before.
 */
#include "pattern.h"

#define MAXN 10000



static int64_t pairs[2 * MAXN];
static int64_t nread[MAXN];
static int status[MAXN];
static unsigned char want[70001];

/* n random ranges; returns the sum of their sizes. */
static int64_t make_pairs(uint64_t *seed, int n) {
  int64_t total = 0;
  for (int i = 0; i < n; i++) {
    int64_t off, len;
    switch (rnd(seed) % 4) {
    case 0: off = SIZE, len = (int64_t)(rnd(seed) % 10); break;       /* at the end */
    case 1: off = SIZE - (int64_t)(rnd(seed) % 100), len = 200; break; /* crosses it */
    case 2: off = (int64_t)(rnd(seed) % (uint64_t)SIZE), len = 0; break;
    default:
      off = (int64_t)(rnd(seed) % (uint64_t)SIZE), len = (int64_t)(rnd(seed) % (n > 100 ? 5000 : 70000));
      break;
    }
    pairs[2 * i] = off;
    pairs[2 * i + 1] = len;
    total += len;
    nread[i] = -7;
    status[i] = 7;
  }
  return total;
}

/* Range i's bytes at the sum of the sizes before it; the bytes a short
 * range did not fill, and the guard after the last, untouched (0xAB). */
static void check(int n, const unsigned char *buf, int64_t total, int ref_fd) {
  int64_t pos = 0;
  for (int i = 0; i < n; i++) {
    int64_t off = pairs[2 * i], len = pairs[2 * i + 1];
    int64_t exp = off + len <= SIZE ? len : SIZE - off;
    CHECK(status[i] == COLIO_OK);
    CHECK(nread[i] == exp);
    if (ref_fd >= 0)
      CHECK(pread_all(ref_fd, want, exp, off) == exp);
    else
      memcpy(want, data + off, (size_t)exp);
    if (nread[i] == exp && memcmp(buf + pos, want, (size_t)exp) != 0) {
      fprintf(stderr, "range %d (%lld+%lld): wrong bytes\n", i, (long long)off, (long long)len);
      t_failures++;
    }
    for (int64_t j = exp; j < len; j++)
      CHECK(buf[pos + j] == 0xAB);
    pos += len;
  }
  CHECK(pos == total);
  for (int j = 0; j < 64; j++)
    CHECK(buf[total + j] == 0xAB);
}

static void batch(colio_source *src, int ref_fd, uint64_t *seed, int n, uint32_t flags,
                  int started) {
  int64_t total = make_pairs(seed, n);
  unsigned char *buf = (unsigned char *)xmalloc((size_t)total + 64);
  memset(buf, 0xAB, (size_t)total + 64);
  if (!started) {
    OK(colio_readv_packed(src, pairs, n, flags, buf, total, nread, status, NULL, 0, NULL));
  } else {
    colio_future *f = NULL;
    OK(colio_readv_packed(src, pairs, n, flags, buf, total + 64, nread, status, NULL, 0, &f));
    REQUIRE(f != NULL);
    int64_t got = -1, sum = 0;
    OK(colio_future_wait(f, COLIO_WAIT_FOREVER, &got));
    for (int i = 0; i < n; i++)
      sum += nread[i];
    CHECK(got == sum);
    int64_t part = -1;
    OK(colio_future_wait_part(f, n - 1, 0, &part));
    CHECK(part == nread[n - 1]);
    OK(colio_future_free(f));
  }
  check(n, buf, total, ref_fd);
  free(buf);
}

int main(void) {
  watchdog(120);
  struct pattern P;
  pattern_open(&P, "packed", 16);
  colio_source *file = P.file, *cb = P.cb;
  int fd = P.fd;

  uint64_t seed = 0x9e3779b97f4a7c15ull;
  int sizes[] = {1, 2, 17, 300, MAXN};
  for (int s = 0; s < 5; s++)
    for (int rep = 0; rep < (sizes[s] == MAXN ? 1 : 6); rep++)
      for (uint32_t fl = 0; fl <= COLIO_READV_COALESCE; fl++)
        for (int started = 0; started < 2; started++) {
          batch(file, fd, &seed, sizes[s], fl, started);
          batch(cb, -1, &seed, sizes[s], fl, started);
        }

  /* Empty batches. */
  OK(colio_readv_packed(file, NULL, 0, 0, NULL, 0, NULL, NULL, NULL, 0, NULL));
  colio_future *f = NULL;
  OK(colio_readv_packed(file, NULL, 0, 0, NULL, 0, NULL, NULL, NULL, 0, &f));
  CHECK(colio_future_done(f) == 1);
  OK(colio_future_free(f));

  /* Checked first: a bad argument starts nothing and writes nothing. */
  unsigned char buf[300];
  int64_t total = 0;
  for (int i = 0; i < 3; i++) {
    pairs[2 * i] = 1000 * i;
    pairs[2 * i + 1] = 100;
    nread[i] = -7;
    status[i] = 7;
    total += 100;
  }
  memset(buf, 0xAB, sizeof buf);
  CHECK_ERR(colio_readv_packed(file, pairs, 3, 0, buf, 299, nread, status, NULL, 0, NULL),
            COLIO_EINVAL, "buf_size");
  CHECK_ERR(colio_readv_packed(file, pairs, 3, 0, NULL, total, nread, status, NULL, 0, NULL),
            COLIO_EINVAL, "NULL");
  CHECK_ERR(colio_readv_packed(file, NULL, 3, 0, buf, total, nread, status, NULL, 0, NULL),
            COLIO_EINVAL, "pairs");
  CHECK_ERR(colio_readv_packed(file, pairs, -1, 0, buf, total, nread, status, NULL, 0, NULL),
            COLIO_EINVAL, "negative");
  CHECK_ERR(colio_readv_packed(file, pairs, 3, 0x80, buf, total, nread, status, NULL, 0, NULL),
            COLIO_EINVAL, "flags");
  colio_cq *cq = NULL;
  OK(colio_cq_new(&cq));
  CHECK_ERR(colio_readv_packed(file, pairs, 3, 0, buf, total, nread, status, cq, 0, NULL),
            COLIO_EINVAL, "out is NULL");
  OK(colio_cq_free(cq));
  pairs[3] = -1;
  CHECK_ERR(colio_readv_packed(file, pairs, 3, 0, buf, total, nread, status, NULL, 0, NULL),
            COLIO_EINVAL, "range 1: negative size");
  pairs[3] = 100;
  pairs[4] = -5;
  CHECK_ERR(colio_readv_packed(file, pairs, 3, 0, buf, total, nread, status, NULL, 0, NULL),
            COLIO_EINVAL, "range 2: negative offset");
  pairs[4] = SIZE + 1;
  f = (colio_future *)1;
  CHECK_ERR(colio_readv_packed(file, pairs, 3, 0, buf, total, nread, status, NULL, 0, &f),
            COLIO_EINVAL, "past the end");
  CHECK(f == NULL);
  for (int i = 0; i < 3; i++)
    CHECK(nread[i] == -7 && status[i] == 7);
  for (size_t j = 0; j < sizeof buf; j++)
    CHECK(buf[j] == 0xAB);

  pattern_close(&P);
  return finish("test_batch_packed");
}
