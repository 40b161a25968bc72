/* Small random reads from C: the per-operation latency of a 4 KiB read of a
 * warm local file through colio_read (synchronous), colio_read_async + wait
 * + free, and plain pread() into the same buffer. The three run in
 * interleaved batches of the same random offsets; the output is one JSON
 * object with the nanoseconds per read of every batch.
 *
 *   small_reads FILE [SIZE] [BATCHES] [PER_BATCH]
 */
#define _GNU_SOURCE
#include <colio.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

enum { M_COLIO, M_ASYNC, M_PREAD, M_COUNT };
static const char *names[M_COUNT] = {"colio_read", "colio_read_async+wait", "pread"};

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s FILE [SIZE] [BATCHES] [PER_BATCH]\n", argv[0]);
    return 2;
  }
  int64_t size = argc > 2 ? atoll(argv[2]) : 4096;
  int batches = argc > 3 ? atoi(argv[3]) : 30;
  int per = argc > 4 ? atoi(argv[4]) : 2000;
  if (size < 1 || batches < 1 || per < 1) return 2;
  int fd = open(argv[1], O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0 || st.st_size < size) { perror(argv[1]); return 1; }
  colio_source *src = NULL;
  if (colio_source_open_file(argv[1], &src) != COLIO_OK) {
    fprintf(stderr, "colio: %s\n", colio_last_error());
    return 1;
  }
  char *buf = malloc((size_t)size);
  int64_t slots = (st.st_size - size) / 4096 + 1;
  int64_t *offs = malloc(sizeof(int64_t) * (size_t)per);
  uint64_t x = 0x9E3779B97F4A7C15ull;
  for (int i = 0; i < per; i++) { /* xorshift: the same offsets for every method */
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    offs[i] = (int64_t)(x % (uint64_t)slots) * 4096;
  }
  double *ns = malloc(sizeof(double) * (size_t)batches * M_COUNT);
  for (int b = -1; b < batches; b++) { /* batch -1 warms the page cache and both paths */
    for (int k = 0; k < M_COUNT; k++) {
      int m = (b + 1 + k) % M_COUNT; /* rotate which goes first */
      double t0 = now_ns();
      for (int i = 0; i < per; i++) {
        int64_t n = 0;
        if (m == M_COLIO) {
          if (colio_read(src, buf, size, offs[i], &n) != COLIO_OK || n != size) goto fail;
        } else if (m == M_ASYNC) {
          colio_future *f = NULL;
          if (colio_read_async(src, buf, size, offs[i], &f) != COLIO_OK) goto fail;
          if (colio_future_wait(f, COLIO_WAIT_FOREVER, &n) != COLIO_OK || n != size) goto fail;
          colio_future_free(f);
        } else {
          if (pread(fd, buf, (size_t)size, offs[i]) != size) goto fail;
        }
      }
      if (b >= 0) ns[b * M_COUNT + m] = (now_ns() - t0) / per;
    }
  }
  printf("{\"size\": %lld, \"per_batch\": %d", (long long)size, per);
  for (int m = 0; m < M_COUNT; m++) {
    printf(", \"%s\": [", names[m]);
    for (int b = 0; b < batches; b++) printf("%s%.1f", b ? ", " : "", ns[b * M_COUNT + m]);
    printf("]");
  }
  printf("}\n");
  colio_source_free(src);
  close(fd);
  free(buf);
  free(offs);
  free(ns);
  return 0;
fail:
  fprintf(stderr, "read failed: %s\n", colio_last_error());
  return 1;
}
