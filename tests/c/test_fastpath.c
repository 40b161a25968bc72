/*
 * test_fastpath.c: small synchronous reads of file and memory sources,
 * which colio serves in C without entering Go. Byte-exact against pread,
 * end-of-source rules, counters, and the race the fast path must survive:
 * reader threads hammer a source while another thread frees it and opens
 * a different file, which reuses the descriptor number. A reader holding
 * the freed handle must get COLIO_EINVAL, never the other file's bytes.
 */
#include "harness.h"

#define SIZE (1 << 20)
#define READERS 4

static colio_source *volatile g_src;
static const unsigned char *g_data;
static int g_stop, g_bad, g_ok, g_freed;

static void *reader(void *arg) {
  unsigned seed = (unsigned)(uintptr_t)arg;
  unsigned char buf[4096];
  while (!__atomic_load_n(&g_stop, __ATOMIC_SEQ_CST)) {
    colio_source *s = g_src;
    int64_t off = (int64_t)(rand_r(&seed) % (SIZE - 4096));
    int64_t n = 0;
    int rc = colio_read(s, buf, 4096, off, &n);
    if (rc == COLIO_OK) {
      if (n != 4096 || memcmp(buf, g_data + off, 4096) != 0)
        __atomic_add_fetch(&g_bad, 1, __ATOMIC_SEQ_CST);
      else
        __atomic_add_fetch(&g_ok, 1, __ATOMIC_SEQ_CST);
    } else if (rc == COLIO_EINVAL) {
      __atomic_add_fetch(&g_freed, 1, __ATOMIC_SEQ_CST);
    } else {
      __atomic_add_fetch(&g_bad, 1, __ATOMIC_SEQ_CST);
    }
  }
  return NULL;
}

static void check_source(colio_source *s, const unsigned char *data, int64_t size) {
  unsigned char buf[8192];
  int64_t n = -1;
  OK(colio_read(s, buf, 4096, 100, &n));
  CHECK(n == 4096 && memcmp(buf, data + 100, 4096) == 0);
  OK(colio_read(s, buf, 8192, size - 100, &n)); /* crosses the end */
  CHECK(n == 100 && memcmp(buf, data + size - 100, 100) == 0);
  OK(colio_read(s, buf, 10, size, &n)); /* at the end */
  CHECK(n == 0);
  CHECK_ERR(colio_read(s, buf, 10, size + 1, &n), COLIO_EINVAL, "past the end");
  CHECK_ERR(colio_read(s, buf, 10, -1, &n), COLIO_EINVAL, "negative");
  CHECK_ERR(colio_read(s, NULL, 10, 0, &n), COLIO_EINVAL, "NULL");
}

int main(void) {
  watchdog(60);
  unsigned char *data = (unsigned char *)xmalloc(SIZE);
  unsigned char *other = (unsigned char *)xmalloc(SIZE);
  fill_pattern(data, SIZE, 21);
  fill_pattern(other, SIZE, 22);
  g_data = data;
  char *path = temp_path("fast");
  char *path2 = temp_path("fast2");
  write_file(path, data, SIZE);
  write_file(path2, other, SIZE);

  colio_counters before, after;
  memset(&before, 0, sizeof before);
  before.struct_size = sizeof before;
  after = before;
  OK(colio_stats(&before));

  colio_source *fs = NULL, *ms = NULL;
  OK(colio_source_open_file(path, &fs));
  OK(colio_source_from_memory(data, SIZE, &ms));
  check_source(fs, data, SIZE);
  check_source(ms, data, SIZE);
  OK(colio_stats(&after));
  CHECK(after.ops_inline - before.ops_inline >= 6);
  CHECK(after.bytes_read - before.bytes_read >= 2 * (4096 + 100));

  /* Over the threshold: the engine's path, same bytes. */
  int64_t thr = 0;
  OK(colio_config_get_int("small_read_threshold", &thr));
  unsigned char *big = (unsigned char *)xmalloc((size_t)thr + 1);
  int64_t n = 0;
  OK(colio_read(fs, big, thr + 1, 7, &n));
  CHECK(n == thr + 1 && memcmp(big, data + 7, (size_t)n) == 0);
  free(big);
  /* Threshold 0 turns the inline path off; the result is the same. */
  OK(colio_config_set_int("small_read_threshold", 0));
  unsigned char b4[4096];
  OK(colio_read(fs, b4, 4096, 5, &n));
  CHECK(n == 4096 && memcmp(b4, data + 5, 4096) == 0);
  OK(colio_config_set_int("small_read_threshold", thr));
  OK(colio_source_free(ms));
  OK(colio_source_free(fs));
  CHECK_ERR(colio_read(fs, b4, 100, 0, &n), COLIO_EINVAL, "colio_source");

  /* The race: free under readers, then reuse the descriptor number. */
  for (int round = 0; round < 20; round++) {
    colio_source *s = NULL;
    OK(colio_source_open_file(path, &s));
    g_src = s;
    __atomic_store_n(&g_stop, 0, __ATOMIC_SEQ_CST);
    pthread_t t[READERS];
    for (int i = 0; i < READERS; i++)
      REQUIRE(pthread_create(&t[i], NULL, reader, (void *)(uintptr_t)(round * 10 + i + 1)) == 0);
    sleep_ns(2000000);
    OK(colio_source_free(s));
    colio_source *s2 = NULL; /* likely gets the freed descriptor's number */
    OK(colio_source_open_file(path2, &s2));
    sleep_ns(2000000);
    __atomic_store_n(&g_stop, 1, __ATOMIC_SEQ_CST);
    for (int i = 0; i < READERS; i++)
      pthread_join(t[i], NULL);
    OK(colio_source_free(s2));
  }
  CHECK(g_bad == 0);
  CHECK(g_ok > 0 && g_freed > 0);
  printf("     fastpath race: %d reads ok, %d refused after free, %d wrong\n", g_ok, g_freed, g_bad);

  unlink(path);
  unlink(path2);
  free(path);
  free(path2);
  free(data);
  free(other);
  return finish("fast path (small synchronous reads in C)");
}
