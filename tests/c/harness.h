/*
 * harness.h: a tiny test harness shared by the C tests. The tests compile
 * as C11 and as C++17 from the same source, so this file (and they) avoid
 * what only one of the two languages accepts: designated initializers,
 * compound literals, _Atomic, implicit void* conversions.
 */
#ifndef COLIO_TEST_HARNESS_H
#define COLIO_TEST_HARNESS_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <colio.h>

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

static int t_failures;

#define CHECK(cond)                                                              \
  do {                                                                           \
    if (!(cond)) {                                                               \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);   \
      t_failures++;                                                              \
    }                                                                            \
  } while (0)

/* Fails the whole program at once: for setup that later checks need. */
#define REQUIRE(cond)                                                            \
  do {                                                                           \
    if (!(cond)) {                                                               \
      fprintf(stderr, "%s:%d: REQUIRE failed: %s (last error: %s)\n", __FILE__,  \
              __LINE__, #cond, colio_last_error());                              \
      exit(1);                                                                   \
    }                                                                            \
  } while (0)

#define CHECK_RC(expr, want)                                                     \
  do {                                                                           \
    int rc_ = (expr);                                                            \
    if (rc_ != (want)) {                                                         \
      fprintf(stderr, "%s:%d: %s returned %d, want %d (last error: %s)\n",       \
              __FILE__, __LINE__, #expr, rc_, (int)(want), colio_last_error());  \
      t_failures++;                                                              \
    }                                                                            \
  } while (0)

#define OK(expr) CHECK_RC(expr, COLIO_OK)

/* expr must fail with code, and leave a message on this thread that
 * mentions substr. */
#define CHECK_ERR(expr, code, substr)                                            \
  do {                                                                           \
    int rc_ = (expr);                                                            \
    const char *m_ = colio_last_error();                                         \
    if (rc_ != (code) || m_ == NULL || m_[0] == '\0' || !strstr(m_, (substr))) { \
      fprintf(stderr, "%s:%d: %s returned %d with message \"%s\"; want %d and "  \
              "a message containing \"%s\"\n", __FILE__, __LINE__, #expr, rc_,  \
              m_ ? m_ : "(null)", (int)(code), (substr));                        \
      t_failures++;                                                              \
    }                                                                            \
  } while (0)

static inline int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline void sleep_ns(int64_t ns) {
  struct timespec ts;
  ts.tv_sec = (time_t)(ns / 1000000000);
  ts.tv_nsec = (long)(ns % 1000000000);
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/* A hang fails the test: SIGALRM kills the process. Before it does, the
 * handler has gdb print every thread's stack to stderr (where gdb is
 * installed), so that a rare hang in CI leaves more than "Alarm clock".
 * fork, execvp, waitpid and write are async-signal-safe. */
static inline void watchdog_fire(int sig) {
  static const char msg[] = "watchdog: the test hung; thread stacks follow (gdb)\n";
  (void)!write(2, msg, sizeof msg - 1);
  char pid[24];
  int n = 0;
  for (long v = (long)getpid(); v > 0; v /= 10)
    pid[n++] = (char)('0' + v % 10);
  for (int i = 0; i < n / 2; i++) {
    char c = pid[i];
    pid[i] = pid[n - 1 - i];
    pid[n - 1 - i] = c;
  }
  pid[n] = 0;
  pid_t child = fork();
  if (child == 0) {
    dup2(2, 1);
    static char gdb[] = "gdb", batch[] = "-batch", nx[] = "-nx", p[] = "-p", ex[] = "-ex",
                bt[] = "thread apply all bt";
    char *argv[] = {gdb, batch, nx, p, pid, ex, bt, NULL};
    execvp("gdb", argv);
    _exit(127);
  }
  signal(sig, SIG_DFL);
  if (child > 0) {
    alarm(60); /* a stuck gdb: the default action ends both */
    while (waitpid(child, NULL, 0) < 0 && errno == EINTR) {
    }
  }
  raise(sig);
}

static inline void watchdog(unsigned seconds) {
  signal(SIGALRM, watchdog_fire);
  alarm(seconds);
}

/* Deterministic bytes: a reference that does not come from colio. */
static inline void fill_pattern(unsigned char *p, int64_t n, uint64_t seed) {
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (int64_t i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    p[i] = (unsigned char)(x >> 24);
  }
}

static inline void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  REQUIRE(p != NULL);
  return p;
}

/* A fresh file path under $TMPDIR (the file exists, empty). Free it. */
static inline char *temp_path(const char *tag) {
  const char *dir = getenv("TMPDIR");
  if (!dir || !*dir)
    dir = "/tmp";
  size_t n = strlen(dir) + strlen(tag) + 32;
  char *p = (char *)xmalloc(n);
  snprintf(p, n, "%s/colio-%s-XXXXXX", dir, tag);
  int fd = mkstemp(p);
  REQUIRE(fd >= 0);
  close(fd);
  return p;
}

static inline void write_file(const char *path, const void *data, size_t n) {
  int fd = open(path, O_WRONLY | O_TRUNC | O_CREAT, 0644);
  REQUIRE(fd >= 0);
  const char *p = (const char *)data;
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    REQUIRE(w > 0);
    p += w;
    n -= (size_t)w;
  }
  REQUIRE(close(fd) == 0);
}

/* Reads n bytes at off with pread: the reference colio is compared to. */
static inline int64_t pread_all(int fd, void *buf, int64_t n, int64_t off) {
  int64_t done = 0;
  while (done < n) {
    ssize_t r = pread(fd, (char *)buf + done, (size_t)(n - done), (off_t)(off + done));
    if (r < 0 && errno == EINTR)
      continue;
    REQUIRE(r >= 0);
    if (r == 0)
      break;
    done += r;
  }
  return done;
}

/* Memory the process holds, for leak tests: resident pages, after giving
 * freed malloc memory back (threads that free get malloc arenas of their
 * own, whose free lists would otherwise read as a megabyte or more of
 * noise between two samples), and the bytes malloc has handed out. */
static inline int64_t rss_bytes(void) {
  malloc_trim(0);
  FILE *f = fopen("/proc/self/statm", "r");
  REQUIRE(f != NULL);
  long size = 0, resident = 0;
  REQUIRE(fscanf(f, "%ld %ld", &size, &resident) == 2);
  fclose(f);
  return (int64_t)resident * sysconf(_SC_PAGESIZE);
}

static inline int64_t heap_bytes(void) {
  struct mallinfo2 mi = mallinfo2();
  return (int64_t)(mi.uordblks + mi.hblkhd);
}

static inline int finish(const char *name) {
  if (t_failures) {
    fprintf(stderr, "FAIL %s: %d check(s) failed\n", name, t_failures);
    return 1;
  }
  printf("ok   %s\n", name);
  return 0;
}

#endif
