/*
 * test_alloc.c: C allocations whose size comes from the caller fail with
 * COLIO_ENOSPC, naming the size, and the process goes on (issue 12.6).
 *
 * Before the fix, colio_read_arrow_buffer and colio_read_ranges_arrow of a
 * 64 GiB sparse file aborted the process: arrow-go's mallocator fell back
 * from calloc to cgo's C.malloc, which treats NULL as a Go runtime fatal
 * error ("fatal error: runtime: C malloc failed", SIGABRT), which recover
 * cannot catch. Here the child below was killed by SIGABRT.
 *
 * The allocation must fail deterministically, whatever the machine's
 * memory and overcommit policy: the checks run in a child process (this
 * program re-executed) that caps its address space with RLIMIT_AS a few
 * GiB above what it uses after colio has started. The parent only checks
 * that the child exited normally, so an abort is a failure, not a crash
 * of the test run.
 */
#include "harness.h"
#include <sys/resource.h>
#include <sys/wait.h>

#define GiB (1024LL * 1024 * 1024)
#define SPARSE_SIZE (64 * GiB)
#define DATA_OFF (1 * GiB) /* a few real bytes in the sparse file */
#define DATA_LEN 100000

static void cap_address_space(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  REQUIRE(f != NULL);
  long pages = 0;
  REQUIRE(fscanf(f, "%ld", &pages) == 1);
  fclose(f);
  struct rlimit rl;
  rl.rlim_cur = rl.rlim_max = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) + (rlim_t)(4 * GiB);
  REQUIRE(setrlimit(RLIMIT_AS, &rl) == 0);
}

static int child(void) {
  watchdog(120);
  char *path = temp_path("alloc");
  int fd = open(path, O_RDWR);
  REQUIRE(fd >= 0);
  REQUIRE(ftruncate(fd, (off_t)SPARSE_SIZE) == 0);
  unsigned char *ref = (unsigned char *)xmalloc(DATA_LEN);
  fill_pattern(ref, DATA_LEN, 12);
  REQUIRE(pwrite(fd, ref, DATA_LEN, DATA_OFF) == DATA_LEN);

  colio_source *src = NULL;
  OK(colio_source_open_file(path, &src));
  REQUIRE(src != NULL);
  /* Start the engine's threads before the cap, as a long-running program
   * would have. */
  unsigned char small[16];
  int64_t got = -1;
  OK(colio_read(src, small, sizeof small, 0, &got));
  cap_address_space();

  struct ArrowArray a;
  struct ArrowSchema s;
  /* The whole file, as Python's src.read_arrow() asks for it. */
  CHECK_ERR(colio_read_arrow_buffer(src, 0, SPARSE_SIZE, &a, &s), COLIO_ENOSPC, "68719476736");
  CHECK(a.release == NULL && s.release == NULL);
  CHECK_ERR(colio_read_arrow_buffer(src, 0, INT64_MAX, &a, NULL), COLIO_ENOSPC, "68719476736 bytes");
  CHECK(a.release == NULL);
  /* Two halves: the one data buffer is the whole 64 GiB. */
  colio_range r[2];
  memset(r, 0, sizeof r);
  r[0].offset = 0;
  r[0].size = SPARSE_SIZE / 2;
  r[1].offset = SPARSE_SIZE / 2;
  r[1].size = SPARSE_SIZE / 2;
  CHECK_ERR(colio_read_ranges_arrow(src, r, 2, &a, &s), COLIO_ENOSPC, "68719476736");
  CHECK(a.release == NULL && s.release == NULL);
  CHECK(colio_last_errno() == ENOMEM);

  /* The process and the engine go on: the real bytes, against pread's. */
  OK(colio_read_arrow_buffer(src, DATA_OFF, DATA_LEN, &a, &s));
  REQUIRE(a.release != NULL);
  CHECK(a.length == DATA_LEN);
  CHECK(a.n_buffers == 2);
  CHECK(memcmp(a.buffers[1], ref, DATA_LEN) == 0);
  unsigned char *back = (unsigned char *)xmalloc(DATA_LEN);
  CHECK(pread_all(fd, back, DATA_LEN, DATA_OFF) == DATA_LEN);
  CHECK(memcmp(a.buffers[1], back, DATA_LEN) == 0);
  a.release(&a);
  s.release(&s);
  r[0].offset = DATA_OFF;
  r[0].size = 10;
  r[1].offset = DATA_OFF + 10;
  r[1].size = DATA_LEN - 10;
  OK(colio_read_ranges_arrow(src, r, 2, &a, NULL));
  REQUIRE(a.release != NULL);
  CHECK(a.length == 2);
  CHECK(memcmp(a.buffers[2], back, DATA_LEN) == 0);
  a.release(&a);

  OK(colio_source_free(src));
  close(fd);
  unlink(path);
  free(path);
  free(ref);
  free(back);
  return finish("alloc (child under RLIMIT_AS): 64 GiB Arrow reads fail with COLIO_ENOSPC");
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "--child") == 0)
    return child();
  watchdog(180);
  /* Under AddressSanitizer a failed allocation aborts unless it may
   * return NULL; the options are read when the child starts. */
  const char *asan = getenv("ASAN_OPTIONS");
  char opts[1024];
  snprintf(opts, sizeof opts, "%s%sallocator_may_return_null=1", asan ? asan : "", asan && *asan ? ":" : "");
  setenv("ASAN_OPTIONS", opts, 1);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    /* exec: the Go runtime in this process does not survive fork. */
    execl("/proc/self/exe", argv[0], "--child", (char *)NULL);
    _exit(127);
  }
  int st = 0;
  REQUIRE(waitpid(pid, &st, 0) == pid);
  if (WIFSIGNALED(st)) {
    fprintf(stderr, "test_alloc: the child was killed by signal %d (%s)\n", WTERMSIG(st),
            strsignal(WTERMSIG(st)));
    t_failures++;
  } else {
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  }
  return finish("alloc: a failed C allocation is an error, not an abort");
}
