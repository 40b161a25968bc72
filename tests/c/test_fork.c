/*
 * test_fork.c: after fork(), every colio call in the child returns
 * COLIO_EFORK at once (the Go runtime did not survive the fork), and the
 * child can still exit, with _exit() and with exit() (which runs atexit
 * handlers and library destructors). The parent is unaffected. The fork
 * happens while reads are in flight on colio's workers.
 */
#include "harness.h"

#include <sys/wait.h>

static int64_t slow_read(void *ctx, void *buf, int64_t size, int64_t offset) {
  (void)ctx;
  (void)offset;
  sleep_ns(20 * 1000000);
  memset(buf, 7, (size_t)size);
  return size;
}

/* Runs in the child; returns the exit code (0: all good). */
static int child(colio_source *src, colio_future *fut) {
  unsigned char buf[16];
  int64_t n = 0;
  int bad = 0;
  int64_t t0 = now_ns();
  if (colio_read(src, buf, sizeof buf, 0, &n) != COLIO_EFORK)
    bad |= 1;
  int64_t took = now_ns() - t0;
  if (took > 1000000000)
    bad |= 2;
  if (!strstr(colio_last_error(), "fork"))
    bad |= 4;
  colio_source *s2 = NULL;
  if (colio_source_from_memory(buf, sizeof buf, &s2) != COLIO_EFORK)
    bad |= 8;
  if (colio_future_wait(fut, COLIO_WAIT_FOREVER, NULL) != COLIO_EFORK)
    bad |= 16;
  if (colio_future_free(fut) != COLIO_EFORK || colio_source_free(src) != COLIO_EFORK)
    bad |= 32;
  int64_t v;
  if (colio_config_get_int("threads", &v) != COLIO_EFORK)
    bad |= 64;
  /* Pure C functions still answer. */
  if (strcmp(colio_version(), "") == 0)
    bad |= 128;
  printf("     fork: first call in the child returned COLIO_EFORK in %.1f us\n", took / 1e3);
  fflush(stdout);
  return bad;
}

static void run(int use_exit) {
  colio_source_callbacks cb;
  memset(&cb, 0, sizeof cb);
  cb.struct_size = sizeof cb;
  cb.read = slow_read;
  cb.flags = COLIO_CALLBACK_CONCURRENT;
  colio_source *src = NULL;
  OK(colio_source_from_callbacks(&cb, 1 << 20, &src));
  static unsigned char buf[8][4096];
  colio_future *f[8];
  for (int i = 0; i < 8; i++)
    OK(colio_read_async(src, buf[i], 4096, i * 4096, &f[i]));

  fflush(stdout);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    int code = child(src, f[0]);
    if (use_exit)
      exit(code);
    _exit(code);
  }
  int status = 0;
  int64_t t0 = now_ns();
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  int64_t took = now_ns() - t0;
  CHECK(WIFEXITED(status));
  if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
    fprintf(stderr, "child (%s) exited with %d\n", use_exit ? "exit" : "_exit",
            WEXITSTATUS(status));
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  CHECK(took < 5 * (int64_t)1000000000);

  /* The parent goes on as if nothing happened. */
  for (int i = 0; i < 8; i++) {
    int64_t n = -1;
    OK(colio_future_wait(f[i], COLIO_WAIT_FOREVER, &n));
    CHECK(n == 4096 && buf[i][0] == 7);
    OK(colio_future_free(f[i]));
  }
  OK(colio_source_free(src));
}

int main(void) {
  watchdog(60);
  run(0);
  run(1);
  return finish("fork (COLIO_EFORK in the child)");
}
