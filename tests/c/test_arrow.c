/*
 * test_arrow.c: colio_read_ranges_arrow and colio_read_arrow_buffer,
 * imported the way a consumer without any Arrow library does it: by
 * walking struct ArrowArray / ArrowSchema (n_buffers, buffers, the int64
 * offsets, length) and calling release. Bytes are compared with pread on
 * the same file. Also: zero copy (a callback source records the pointers
 * it was asked to fill; they are the exported buffer's), release from a
 * thread other than the one that exported, moved structs, exactly-once
 * release, short ranges, errors, fork, and a leak test: 100,000 exports
 * imported and released grow heap use (mallinfo2) and RSS by less than
 * 2 MiB between the 10,000th and the 100,000th.
 * Usage: test_arrow [leak-cycles] (fewer than 100,000 skip the growth
 * assertion). Built with -fsanitize=address it runs 5,000 by default:
 * ASan's quarantine holds freed memory back, so growth means nothing
 * there, while its leak check at exit still catches any export that was
 * not freed.
 */
#include "harness.h"
#include <sys/wait.h>

#define FILE_SIZE (3 * 1024 * 1024 + 123)
#define LEAK_WARMUP 10000
#define LEAK_CYCLES 100000
#define LEAK_LIMIT (2 << 20)

static unsigned char *ref; /* the file's bytes, from the generator */
static int ref_fd;         /* the file, for pread */

/* ---- a plain-C importer ------------------------------------------------ */

/* Checks that a is a large_binary array of n elements in the layout the
 * header promises, and that element i equals pread(want_off[i],
 * want_len[i]). */
static void check_large_binary(const struct ArrowArray *a, const struct ArrowSchema *s, int64_t n,
                               const int64_t *want_off, const int64_t *want_len) {
  REQUIRE(a->release != NULL);
  if (s) {
    REQUIRE(s->release != NULL);
    CHECK(strcmp(s->format, "Z") == 0);
    CHECK(s->n_children == 0 && s->dictionary == NULL);
  }
  CHECK(a->length == n);
  CHECK(a->null_count == 0);
  CHECK(a->offset == 0);
  REQUIRE(a->n_buffers == 3);
  CHECK(a->n_children == 0 && a->dictionary == NULL);
  REQUIRE(a->buffers != NULL);
  CHECK(a->buffers[0] == NULL);
  const int64_t *offs = (const int64_t *)a->buffers[1];
  const unsigned char *data = (const unsigned char *)a->buffers[2];
  REQUIRE(offs != NULL);
  CHECK(offs[0] == 0);
  for (int64_t i = 0; i < n; i++) {
    int64_t len = offs[i + 1] - offs[i];
    if (len != want_len[i]) {
      fprintf(stderr, "element %lld: length %lld, want %lld\n", (long long)i, (long long)len,
              (long long)want_len[i]);
      CHECK(len == want_len[i]);
      continue;
    }
    if (len == 0)
      continue;
    REQUIRE(data != NULL);
    unsigned char *exp = (unsigned char *)xmalloc((size_t)len);
    CHECK(pread_all(ref_fd, exp, len, want_off[i]) == len);
    CHECK(memcmp(data + offs[i], exp, (size_t)len) == 0);
    free(exp);
  }
}

static void release_all(struct ArrowArray *a, struct ArrowSchema *s) {
  REQUIRE(a->release != NULL);
  a->release(a);
  CHECK(a->release == NULL); /* the producer marks it released */
  if (s) {
    REQUIRE(s->release != NULL);
    s->release(s);
    CHECK(s->release == NULL);
  }
}

/* ---- tests --------------------------------------------------------------- */

static void test_ranges(colio_source *src) {
  /* Large and small, overlapping, out of order, empty, crossing the end
   * (shorter element) and starting at the end (empty element). */
  const int64_t offs[] = {0, 1000, 5, FILE_SIZE - 10, 2 * 1024 * 1024, 77, FILE_SIZE, 123456};
  const int64_t sizes[] = {1 << 20, 100, 0, 500, 1024 * 1024 + 123, 1, 64, 3};
  const int64_t n = (int64_t)(sizeof offs / sizeof offs[0]);
  colio_range r[sizeof offs / sizeof offs[0]];
  int64_t want[sizeof offs / sizeof offs[0]];
  for (int64_t i = 0; i < n; i++) {
    r[i].offset = offs[i];
    r[i].size = sizes[i];
    r[i].buf = NULL;
    int64_t left = FILE_SIZE - offs[i];
    want[i] = sizes[i] < left ? sizes[i] : left;
  }
  struct ArrowArray a;
  struct ArrowSchema s;
  OK(colio_read_ranges_arrow(src, r, n, &a, &s));
  check_large_binary(&a, &s, n, offs, want);
  const int64_t *o = (const int64_t *)a.buffers[1];
  CHECK(o[n] == want[0] + want[1] + want[2] + want[3] + want[4] + want[5] + want[6] + want[7]);
  CHECK(want[3] == 10 && want[6] == 0);

  /* A moved struct is released through its new address; the old one is
   * then left alone, as the specification says. */
  struct ArrowArray moved;
  memcpy(&moved, &a, sizeof a);
  a.release = NULL;
  release_all(&moved, &s);

  /* No ranges: an empty array whose offsets buffer holds one 0. */
  OK(colio_read_ranges_arrow(src, NULL, 0, &a, NULL));
  check_large_binary(&a, NULL, 0, NULL, NULL);
  release_all(&a, NULL);
}

static void test_buffer(colio_source *src) {
  struct ArrowArray a;
  struct ArrowSchema s;
  int64_t cases[][3] = {
      /* offset, size, expected length */
      {0, FILE_SIZE, FILE_SIZE},
      {4096, 1 << 20, 1 << 20},
      {FILE_SIZE - 7, 100, 7}, /* crosses the end: shorter */
      {FILE_SIZE, 100, 0},     /* at the end: empty */
      {10, 0, 0},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    OK(colio_read_arrow_buffer(src, cases[k][0], cases[k][1], &a, &s));
    REQUIRE(a.release != NULL && s.release != NULL);
    CHECK(strcmp(s.format, "C") == 0);
    CHECK(a.length == cases[k][2]);
    CHECK(a.null_count == 0 && a.offset == 0);
    REQUIRE(a.n_buffers == 2);
    CHECK(a.buffers[0] == NULL);
    if (a.length > 0) {
      unsigned char *exp = (unsigned char *)xmalloc((size_t)a.length);
      CHECK(pread_all(ref_fd, exp, a.length, cases[k][0]) == a.length);
      CHECK(memcmp(a.buffers[1], exp, (size_t)a.length) == 0);
      free(exp);
    }
    release_all(&a, &s);
  }
}

/* ---- zero copy: the pointers a callback source is asked to fill -------- */

#define MAX_CALLS 4096
typedef struct {
  pthread_mutex_t mu;
  int ncalls;
  uintptr_t lo[MAX_CALLS], hi[MAX_CALLS]; /* [buf, buf + size) of each call */
} call_log;

static int64_t logging_read(void *ctx, void *buf, int64_t size, int64_t offset) {
  call_log *log = (call_log *)ctx;
  pthread_mutex_lock(&log->mu);
  if (log->ncalls < MAX_CALLS) {
    log->lo[log->ncalls] = (uintptr_t)buf;
    log->hi[log->ncalls] = (uintptr_t)buf + (uintptr_t)size;
    log->ncalls++;
  }
  pthread_mutex_unlock(&log->mu);
  int64_t n = size < FILE_SIZE - offset ? size : FILE_SIZE - offset;
  memcpy(buf, ref + offset, (size_t)n);
  return n;
}

static void test_zero_copy(void) {
  call_log *log = (call_log *)calloc(1, sizeof *log);
  REQUIRE(log != NULL);
  pthread_mutex_init(&log->mu, NULL);
  colio_source_callbacks cb;
  memset(&cb, 0, sizeof cb);
  cb.struct_size = sizeof cb;
  cb.ctx = log;
  cb.read = logging_read;
  cb.flags = COLIO_CALLBACK_CONCURRENT;
  colio_source *src = NULL;
  OK(colio_source_from_callbacks(&cb, FILE_SIZE, &src));
  REQUIRE(src != NULL);

  colio_range r[3];
  const int64_t offs[3] = {100, 2000000, 50};
  const int64_t lens[3] = {1000, 1000000, 7};
  for (int i = 0; i < 3; i++) {
    r[i].offset = offs[i];
    r[i].size = lens[i];
    r[i].buf = NULL;
  }
  struct ArrowArray a;
  OK(colio_read_ranges_arrow(src, r, 3, &a, NULL));
  check_large_binary(&a, NULL, 3, offs, lens);
  /* Every byte of the data buffer was filled by a callback call directly:
   * the calls' [buf, buf + size) cover [data, data + total) exactly. */
  uintptr_t data = (uintptr_t)a.buffers[2];
  const int64_t *o = (const int64_t *)a.buffers[1];
  int64_t covered = 0;
  for (int i = 0; i < log->ncalls; i++) {
    CHECK(log->lo[i] >= data && log->hi[i] <= data + (uintptr_t)o[3]);
    covered += (int64_t)(log->hi[i] - log->lo[i]);
  }
  CHECK(covered == o[3]);
  /* Each element's first byte was a call's buf. */
  for (int e = 0; e < 3; e++) {
    int found = 0;
    for (int i = 0; i < log->ncalls; i++)
      found |= log->lo[i] == data + (uintptr_t)o[e];
    CHECK(found);
  }
  release_all(&a, NULL);

  log->ncalls = 0;
  struct ArrowArray b;
  OK(colio_read_arrow_buffer(src, 12345, 2000000, &b, NULL));
  CHECK(b.length == 2000000);
  CHECK(log->ncalls >= 1 && log->lo[0] >= (uintptr_t)b.buffers[1] &&
        log->hi[0] <= (uintptr_t)b.buffers[1] + 2000000);
  CHECK(memcmp(b.buffers[1], ref + 12345, 2000000) == 0);
  release_all(&b, NULL);
  OK(colio_source_free(src));
  pthread_mutex_destroy(&log->mu);
  free(log);
}

/* ---- release on another thread ------------------------------------------ */

typedef struct {
  struct ArrowArray *arrays;
  struct ArrowSchema *schemas;
  int n;
} release_job;

static void *release_thread(void *p) {
  release_job *j = (release_job *)p;
  for (int i = 0; i < j->n; i++) {
    j->arrays[i].release(&j->arrays[i]);
    if (j->schemas)
      j->schemas[i].release(&j->schemas[i]);
  }
  return NULL;
}

static void release_elsewhere(struct ArrowArray *arrays, struct ArrowSchema *schemas, int n) {
  release_job j;
  j.arrays = arrays;
  j.schemas = schemas;
  j.n = n;
  pthread_t t;
  REQUIRE(pthread_create(&t, NULL, release_thread, &j) == 0);
  REQUIRE(pthread_join(t, NULL) == 0);
  for (int i = 0; i < n; i++) {
    CHECK(arrays[i].release == NULL);
    if (schemas)
      CHECK(schemas[i].release == NULL);
  }
}

static void test_other_thread(colio_source *src) {
  enum { N = 16 };
  struct ArrowArray a[N];
  struct ArrowSchema s[N];
  for (int i = 0; i < N; i++) {
    colio_range r;
    r.offset = (int64_t)i * 1000;
    r.size = 5000;
    r.buf = NULL;
    if (i % 2)
      OK(colio_read_ranges_arrow(src, &r, 1, &a[i], &s[i]));
    else
      OK(colio_read_arrow_buffer(src, r.offset, r.size, &a[i], &s[i]));
  }
  release_elsewhere(a, s, N);
}

/* ---- more references: colio_arrow_array_ref ------------------------------- */

static void dummy_release(struct ArrowArray *a) { a->release = NULL; }

static void test_refs(colio_source *src) {
  struct ArrowArray a, r1, r2, r3;
  struct ArrowSchema s1;
  colio_range r;
  r.offset = 100;
  r.size = 200000;
  r.buf = NULL;
  OK(colio_read_ranges_arrow(src, &r, 1, &a, NULL));
  OK(colio_arrow_array_ref(&a, &r1, &s1));
  OK(colio_arrow_array_ref(&r1, &r2, NULL)); /* a reference of a reference */
  /* The same memory, not a copy. */
  CHECK(r1.buffers == a.buffers && r2.buffers == a.buffers);
  CHECK(r1.length == 1 && r2.n_buffers == 3);
  CHECK(strcmp(s1.format, "Z") == 0 && s1.n_children == 0);
  const int64_t want_off[1] = {100};
  const int64_t want_len[1] = {200000};
  /* Released in any order, from any thread: the data stay valid until the
   * last reference goes. */
  release_all(&a, NULL);
  check_large_binary(&r1, &s1, 1, want_off, want_len);
  release_all(&r1, &s1);
  check_large_binary(&r2, NULL, 1, want_off, want_len);
  /* out == array would lose a reference: refused, r2 left as it was. */
  CHECK_ERR(colio_arrow_array_ref(&r2, &r2, NULL), COLIO_EINVAL, "out is array itself");
  REQUIRE(r2.release != NULL);
  OK(colio_arrow_array_ref(&r2, &r3, NULL));
  struct ArrowArray two[2];
  two[0] = r2;
  two[1] = r3;
  release_elsewhere(two, NULL, 1);
  check_large_binary(&two[1], NULL, 1, want_off, want_len);
  release_elsewhere(two + 1, NULL, 1);

  /* Errors: NULL, released, not colio's. */
  struct ArrowArray x;
  CHECK_ERR(colio_arrow_array_ref(&a, NULL, NULL), COLIO_EINVAL, "out is NULL");
  memset(&x, 0xAB, sizeof x);
  CHECK_ERR(colio_arrow_array_ref(NULL, &x, NULL), COLIO_EINVAL, "array is NULL");
  CHECK(x.release == NULL);
  CHECK_ERR(colio_arrow_array_ref(&a, &x, NULL), COLIO_EINVAL, "released already");
  struct ArrowArray foreign;
  memset(&foreign, 0, sizeof foreign);
  foreign.release = dummy_release;
  CHECK_ERR(colio_arrow_array_ref(&foreign, &x, NULL), COLIO_EINVAL, "not exported by colio");
  CHECK(x.release == NULL);
}

/* ---- errors --------------------------------------------------------------- */

static int64_t failing_read(void *ctx, void *buf, int64_t size, int64_t offset) {
  (void)ctx;
  if (offset >= 1000000)
    return -EIO;
  memcpy(buf, ref + offset, (size_t)size);
  return size;
}

static void test_errors(colio_source *src) {
  struct ArrowArray a;
  struct ArrowSchema s;
  colio_range r[2];
  memset(r, 0, sizeof r);
  r[0].size = 10;
  r[1].size = 10;

  /* NULL out; the schema may be NULL but the array may not. */
  CHECK_ERR(colio_read_ranges_arrow(src, r, 2, NULL, &s), COLIO_EINVAL, "out is NULL");
  CHECK_ERR(colio_read_arrow_buffer(src, 0, 10, NULL, NULL), COLIO_EINVAL, "out is NULL");

  /* Every failure leaves both structs released (release == NULL), even
   * if they held garbage before. */
#define GARBAGE() (memset(&a, 0xAB, sizeof a), memset(&s, 0xCD, sizeof s))
  GARBAGE();
  CHECK_ERR(colio_read_ranges_arrow(src, NULL, 2, &a, &s), COLIO_EINVAL, "ranges is NULL");
  CHECK(a.release == NULL && s.release == NULL);
  GARBAGE();
  CHECK_ERR(colio_read_ranges_arrow(src, r, -1, &a, &s), COLIO_EINVAL, "negative");
  CHECK(a.release == NULL && s.release == NULL);
  r[1].offset = -5;
  GARBAGE();
  CHECK_ERR(colio_read_ranges_arrow(src, r, 2, &a, &s), COLIO_EINVAL, "range 1: negative offset");
  CHECK(a.release == NULL && s.release == NULL);
  r[1].offset = 0;
  r[1].size = -1;
  CHECK_ERR(colio_read_ranges_arrow(src, r, 2, &a, &s), COLIO_EINVAL, "range 1: negative size");
  r[1].size = INT64_MAX;
  r[1].offset = 10;
  CHECK_ERR(colio_read_ranges_arrow(src, r, 2, &a, &s), COLIO_EINVAL, "overflows");
  r[1].size = 1;
  r[1].offset = FILE_SIZE + 1;
  CHECK_ERR(colio_read_ranges_arrow(src, r, 2, &a, &s), COLIO_EINVAL, "past the end");
  CHECK(a.release == NULL && s.release == NULL);
  CHECK_ERR(colio_read_arrow_buffer(src, FILE_SIZE + 1, 1, &a, &s), COLIO_EINVAL, "past the end");
  CHECK_ERR(colio_read_arrow_buffer(src, -1, 1, &a, &s), COLIO_EINVAL, "negative offset");
  CHECK_ERR(colio_read_arrow_buffer(src, 0, -1, &a, &s), COLIO_EINVAL, "negative size");
  CHECK(a.release == NULL && s.release == NULL);

  /* A bad handle. */
  colio_source *freed = NULL;
  OK(colio_source_from_memory(ref, 100, &freed));
  OK(colio_source_free(freed));
  CHECK_ERR(colio_read_arrow_buffer(freed, 0, 10, &a, NULL), COLIO_EINVAL, "already freed");
  CHECK_ERR(colio_read_ranges_arrow(freed, r, 1, &a, NULL), COLIO_EINVAL, "already freed");

  /* A failed read fails the call after every read ended; nothing leaks
   * (the sanitizer run checks). */
  colio_source_callbacks cb;
  memset(&cb, 0, sizeof cb);
  cb.struct_size = sizeof cb;
  cb.read = failing_read;
  cb.flags = COLIO_CALLBACK_CONCURRENT;
  colio_source *bad = NULL;
  OK(colio_source_from_callbacks(&cb, FILE_SIZE, &bad));
  colio_range rr[3];
  memset(rr, 0, sizeof rr);
  rr[0].offset = 0;
  rr[0].size = 500000;
  rr[1].offset = 1500000;
  rr[1].size = 100;
  rr[2].offset = 10;
  rr[2].size = 500000;
  GARBAGE();
  CHECK_ERR(colio_read_ranges_arrow(bad, rr, 3, &a, &s), COLIO_ECALLBACK, "range 1 of 3");
  CHECK(a.release == NULL && s.release == NULL);
  CHECK_ERR(colio_read_arrow_buffer(bad, 1000000, 2000, &a, &s), COLIO_ECALLBACK, "colio_read_arrow_buffer: read callback failed");
  CHECK(a.release == NULL && s.release == NULL);
  OK(colio_read_arrow_buffer(bad, 0, 1000, &a, NULL)); /* the source still works */
  CHECK(a.length == 1000);
  release_all(&a, NULL);
  OK(colio_source_free(bad));
#undef GARBAGE
}

/* ---- fork: a release in the child does not enter Go ---------------------- */

static void test_fork(colio_source *src) {
  struct ArrowArray a;
  OK(colio_read_arrow_buffer(src, 0, 4096, &a, NULL));
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    alarm(10); /* a release that entered Go could hang */
    a.release(&a);
    _exit(a.release == NULL ? 0 : 3);
  }
  int st = 0;
  REQUIRE(waitpid(pid, &st, 0) == pid);
  CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  CHECK(memcmp(a.buffers[1], ref, 4096) == 0); /* the parent's copy is intact */
  release_all(&a, NULL);
}

/* ---- leaks --------------------------------------------------------------- */


/* Exports in batches; every third batch is released on a new thread. */
static void test_leaks(long cycles) {
  enum { BATCH = 500 };
  colio_source *src = NULL;
  OK(colio_source_from_memory(ref, 1 << 20, &src));
  struct ArrowArray *a = (struct ArrowArray *)xmalloc(BATCH * sizeof *a);
  struct ArrowSchema *s = (struct ArrowSchema *)xmalloc(BATCH * sizeof *s);
  /* RSS is sampled after every batch and compared as the lowest sample
   * of the first 5,000 exports after the warm-up against the lowest of the
   * last 5,000: a leak grows every sample, while the Go runtime's heap
   * and the malloc arenas of the releasing threads come and go between
   * samples (single samples varied by 2 MiB on a busy machine). */
  int64_t heap0 = 0, rss0 = INT64_MAX, rss1 = INT64_MAX, sum = 0;
  int64_t t0 = now_ns();
  long done = 0;
  for (long b = 0; done < cycles; b++) {
    int n = cycles - done < BATCH ? (int)(cycles - done) : BATCH;
    for (int i = 0; i < n; i++) {
      long k = done + i;
      colio_range r[3];
      for (int j = 0; j < 3; j++) {
        r[j].offset = (k * 37 + j * 4099) % (1 << 19);
        r[j].size = 64 + (k + j) % 512;
        r[j].buf = NULL;
      }
      if (k % 2)
        REQUIRE(colio_read_ranges_arrow(src, r, 3, &a[i], &s[i]) == COLIO_OK);
      else
        REQUIRE(colio_read_arrow_buffer(src, r[0].offset, r[0].size, &a[i], &s[i]) == COLIO_OK);
      /* Import: walk to the last byte. */
      const unsigned char *data = (const unsigned char *)a[i].buffers[a[i].n_buffers - 1];
      int64_t len = a[i].n_buffers == 3 ? ((const int64_t *)a[i].buffers[1])[a[i].length]
                                        : a[i].length;
      REQUIRE(len > 0 && data[len - 1] == ref[(a[i].n_buffers == 3 ? r[2].offset + r[2].size
                                                                   : r[0].offset + r[0].size) - 1]);
      sum += len;
      if (k % 5 == 0) { /* a second reference, released before the first */
        struct ArrowArray ref2;
        REQUIRE(colio_arrow_array_ref(&a[i], &ref2, NULL) == COLIO_OK);
        release_all(&ref2, NULL);
      }
    }
    if (b % 3 == 2) {
      release_elsewhere(a, s, n);
    } else {
      for (int i = 0; i < n; i++)
        release_all(&a[i], &s[i]);
    }
    long before = done;
    done += n;
    if (before < LEAK_WARMUP && done >= LEAK_WARMUP)
      heap0 = heap_bytes();
    if (done >= LEAK_WARMUP && done < LEAK_WARMUP + 5000) {
      int64_t r = rss_bytes();
      rss0 = r < rss0 ? r : rss0;
    }
    if (done > cycles - 5000) {
      int64_t r = rss_bytes();
      rss1 = r < rss1 ? r : rss1;
    }
  }
  double secs = (double)(now_ns() - t0) / 1e9;
  if (cycles >= LEAK_CYCLES) {
    int64_t dheap = heap_bytes() - heap0, drss = rss1 - rss0;
    printf("     arrow leak: %ld exports (%lld bytes) imported and released in %.1f s; growth "
           "from export %d to %ld: heap %+lld B, RSS %+lld KiB (limit %d KiB)\n",
           cycles, (long long)sum, secs, LEAK_WARMUP, cycles, (long long)dheap,
           (long long)(drss / 1024), LEAK_LIMIT / 1024);
    CHECK(dheap < LEAK_LIMIT);
    CHECK(drss < LEAK_LIMIT);
  } else {
    printf("     arrow leak: %ld exports in %.1f s (growth not asserted below %d)\n", cycles, secs,
           LEAK_CYCLES);
  }
  free(a);
  free(s);
  OK(colio_source_free(src));
}

int main(int argc, char **argv) {
#if defined(__SANITIZE_ADDRESS__)
  long cycles = argc > 1 ? atol(argv[1]) : 5000;
#else
  long cycles = argc > 1 ? atol(argv[1]) : LEAK_CYCLES;
#endif
  watchdog(600);
  ref = (unsigned char *)xmalloc(FILE_SIZE);
  fill_pattern(ref, FILE_SIZE, 42);
  char *path = temp_path("arrow");
  write_file(path, ref, FILE_SIZE);
  ref_fd = open(path, O_RDONLY);
  REQUIRE(ref_fd >= 0);
  /* Small tasks, so a large range is read as several parallel parts. */
  OK(colio_config_set_int("task_size", 256 * 1024));

  colio_source *src = NULL;
  OK(colio_source_open_file(path, &src));
  REQUIRE(src != NULL);
  test_ranges(src);
  test_buffer(src);
  test_zero_copy();
  test_other_thread(src);
  test_refs(src);
  test_errors(src);
  test_fork(src);
  OK(colio_source_free(src));
  OK(colio_config_set_int("task_size", 4 * 1024 * 1024));
  test_leaks(cycles);

  close(ref_fd);
  unlink(path);
  free(path);
  free(ref);
  return finish("arrow (C Data Interface export, plain-C import)");
}
