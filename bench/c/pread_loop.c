/* The practical limit for a large local read: N threads each pread()ing
 * their share of a file into one preallocated buffer, in chunks of
 * task_size bytes, the way colio splits a request. Prints one JSON line.
 *
 *   pread_loop FILE THREADS [TASK_SIZE] [REPEATS]
 *
 * Built with -DPREAD_LOOP_LIB -shared it is a library instead, whose
 * pread_loop_run() bench/run.py calls through ctypes (which releases the
 * GIL), so that the C loop reads into the same buffer as colio, in the same
 * process, interleaved with it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct job {
  int fd;
  char *buf;
  int64_t size, task;
  int64_t next; /* shared cursor, taken with __atomic */
  int failed;
};

static void *worker(void *arg) {
  struct job *j = arg;
  for (;;) {
    int64_t off = __atomic_fetch_add(&j->next, j->task, __ATOMIC_RELAXED);
    if (off >= j->size) return NULL;
    int64_t end = off + j->task < j->size ? off + j->task : j->size;
    while (off < end) {
      ssize_t n = pread(j->fd, j->buf + off, (size_t)(end - off), off);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) { j->failed = 1; return NULL; }
      off += n;
    }
  }
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Reads size bytes of fd from offset 0 into buf with threads threads and
 * returns the seconds it took, or a negative value if a read failed. */
double pread_loop_run(int fd, char *buf, int64_t size, int threads, int64_t task) {
  if (threads < 1 || threads > 256 || task < 1) return -1;
  struct job j = {fd, buf, size, task, 0, 0};
  pthread_t t[256];
  double t0 = now();
  for (int i = 0; i < threads; i++) pthread_create(&t[i], NULL, worker, &j);
  for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
  double el = now() - t0;
  return j.failed ? -1 : el;
}

#ifndef PREAD_LOOP_LIB

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s FILE THREADS [TASK_SIZE] [REPEATS]\n", argv[0]);
    return 2;
  }
  int threads = atoi(argv[2]);
  int64_t task = argc > 3 ? atoll(argv[3]) : 4 << 20;
  int repeats = argc > 4 ? atoi(argv[4]) : 1;
  if (threads < 1 || threads > 256 || task < 1 || repeats < 1) {
    fprintf(stderr, "bad arguments\n");
    return 2;
  }
  int fd = open(argv[1], O_RDONLY | O_CLOEXEC);
  if (fd < 0) { perror(argv[1]); return 1; }
  struct stat st;
  if (fstat(fd, &st) != 0) { perror("fstat"); return 1; }
  char *buf = malloc((size_t)st.st_size);
  if (!buf) { perror("malloc"); return 1; }
  memset(buf, 0, (size_t)st.st_size); /* fault the pages in, as colio's callers do */
  printf("{\"threads\": %d, \"size\": %lld, \"seconds\": [", threads, (long long)st.st_size);
  for (int r = 0; r < repeats; r++) {
    double el = pread_loop_run(fd, buf, st.st_size, threads, task);
    if (el < 0) { fprintf(stderr, "read failed\n"); return 1; }
    printf("%s%.6f", r ? ", " : "", el);
  }
  printf("]}\n");
  free(buf);
  close(fd);
  return 0;
}
#endif
