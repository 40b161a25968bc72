/*
 * test_stress.c: opens and frees handles 100,000 times (memory, callback
 * and file sources, memory and void sinks, and a future for each), and
 * checks that heap use (glibc mallinfo2: colio's C allocations, the
 * callback struct copies and error strings) and RSS (everything, the Go
 * heap included) grow by less than 2 MiB between cycle 10,000 and cycle
 * 100,000. Usage: test_stress [cycles] (fewer cycles skip the assertion;
 * the sanitizer run uses that).
 */
#include "harness.h"

#define WARMUP 10000
#define CYCLES 100000
#define LIMIT (2 << 20)


static int releases;

static int64_t cb_read(void *ctx, void *buf, int64_t size, int64_t offset) {
  (void)ctx;
  memset(buf, (int)offset, (size_t)size);
  return size;
}

static void cb_release(void *ctx) {
  (void)ctx;
  releases++;
}

static void on_done(void *ctx, colio_future *f, int status, int64_t n) {
  (void)f;
  (void)status;
  (void)n;
  __atomic_add_fetch((int *)ctx, 1, __ATOMIC_SEQ_CST);
}

int main(int argc, char **argv) {
  long cycles = argc > 1 ? atol(argv[1]) : CYCLES;
  watchdog(300);
  static unsigned char data[4096], out[4096];
  fill_pattern(data, sizeof data, 5);
  char *path = temp_path("stress");
  write_file(path, data, sizeof data);
  colio_source_callbacks cb;
  memset(&cb, 0, sizeof cb);
  cb.struct_size = sizeof cb;
  cb.read = cb_read;
  cb.release = cb_release;
  int done_count = 0;

  int64_t heap0 = 0, rss0 = 0;
  int64_t t0 = now_ns();
  for (long i = 1; i <= cycles; i++) {
    colio_source *src = NULL;
    colio_sink *snk = NULL;
    colio_future *f = NULL;
    unsigned char buf[512];
    int64_t n = 0;
    REQUIRE(colio_source_from_memory(data, sizeof data, &src) == COLIO_OK);
    REQUIRE(colio_read_async(src, buf, sizeof buf, (int64_t)(i % 8) * 512, &f) == COLIO_OK);
    REQUIRE(colio_future_on_done(f, on_done, &done_count) == COLIO_OK);
    REQUIRE(colio_future_wait(f, COLIO_WAIT_FOREVER, &n) == COLIO_OK && n == 512);
    REQUIRE(colio_future_free(f) == COLIO_OK);
    REQUIRE(colio_source_free(src) == COLIO_OK);

    REQUIRE(colio_source_from_callbacks(&cb, 1 << 20, &src) == COLIO_OK);
    REQUIRE(colio_read(src, buf, 64, 0, &n) == COLIO_OK && n == 64);
    REQUIRE(colio_source_free(src) == COLIO_OK);

    if (i % 10 == 0) { /* file handles cost system calls: fewer of them */
      REQUIRE(colio_source_open_file(path, &src) == COLIO_OK);
      REQUIRE(colio_read(src, buf, 100, 0, &n) == COLIO_OK && n == 100);
      REQUIRE(colio_source_free(src) == COLIO_OK);
    }

    REQUIRE(colio_sink_from_memory(out, sizeof out, &snk) == COLIO_OK);
    REQUIRE(colio_write_async(snk, buf, 100, COLIO_APPEND, &f) == COLIO_OK);
    REQUIRE(colio_future_wait(f, COLIO_WAIT_FOREVER, NULL) == COLIO_OK);
    /* A failed future keeps a C message string until it is freed. */
    colio_future *bad = NULL;
    REQUIRE(colio_write_async(snk, buf, 100, 4050, &bad) == COLIO_OK);
    const char *msg = NULL;
    REQUIRE(colio_future_error(bad, &msg, NULL) == COLIO_ENOSPC && msg[0] != '\0');
    REQUIRE(colio_future_free(bad) == COLIO_OK);
    REQUIRE(colio_future_free(f) == COLIO_OK);
    REQUIRE(colio_sink_free(snk) == COLIO_ENOSPC);

    REQUIRE(colio_sink_void(&snk) == COLIO_OK);
    REQUIRE(colio_sink_free(snk) == COLIO_OK);
    /* A failed call records a message on this thread. */
    REQUIRE(colio_source_free(src) == COLIO_EINVAL);

    if (i == WARMUP) {
      heap0 = heap_bytes();
      rss0 = rss_bytes();
    }
  }
  int64_t secs_ns = now_ns() - t0;
  CHECK(releases == cycles);
  CHECK(done_count == cycles);
  if (cycles >= CYCLES) {
    int64_t dheap = heap_bytes() - heap0, drss = rss_bytes() - rss0;
    printf("     stress: %ld cycles (%ld handles) in %.1f s; growth from cycle %d to %ld: "
           "heap %+lld B, RSS %+lld KiB (limit %d KiB)\n",
           cycles, cycles * 7 + cycles / 10, secs_ns / 1e9, WARMUP, cycles, (long long)dheap,
           (long long)(drss / 1024), LIMIT / 1024);
    CHECK(dheap < LIMIT);
    CHECK(drss < LIMIT);
  } else {
    printf("     stress: %ld cycles in %.1f s (growth not asserted below %d cycles)\n", cycles,
           secs_ns / 1e9, CYCLES);
  }
  unlink(path);
  free(path);
  return finish("stress (open/free handles)");
}
