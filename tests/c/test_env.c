/*
 * test_env.c: an invalid COLIO_* environment variable makes every call
 * fail with COLIO_EINVAL and a message naming the variable, never a silent
 * default. The program re-executes itself with the variable set, because
 * the environment is read once, at the first call.
 */
#include "harness.h"

int main(int argc, char **argv) {
  (void)argc;
  watchdog(30);
  if (!getenv("COLIO_TEST_REEXEC")) {
    setenv("COLIO_TEST_REEXEC", "1", 1);
    setenv("COLIO_NTHREADS", "eight", 1);
    execv("/proc/self/exe", argv);
    perror("execv");
    return 1;
  }
  unsigned char buf[16];
  colio_source *src = NULL;
  colio_sink *snk = NULL;
  int64_t v = 0;
  CHECK_ERR(colio_config_get_int("threads", &v), COLIO_EINVAL, "COLIO_NTHREADS");
  CHECK_ERR(colio_config_set_int("threads", 4), COLIO_EINVAL, "COLIO_NTHREADS");
  CHECK_ERR(colio_source_from_memory(buf, sizeof buf, &src), COLIO_EINVAL, "COLIO_NTHREADS");
  CHECK(strstr(colio_last_error(), "eight") != NULL);
  CHECK_ERR(colio_source_open_file("/etc/hostname", &src), COLIO_EINVAL, "COLIO_NTHREADS");
  CHECK_ERR(colio_sink_void(&snk), COLIO_EINVAL, "COLIO_NTHREADS");
  colio_counters st;
  memset(&st, 0, sizeof st);
  st.struct_size = sizeof st;
  CHECK_ERR(colio_stats(&st), COLIO_EINVAL, "COLIO_NTHREADS");
  CHECK(src == NULL && snk == NULL);
  /* The error stays: a second call fails the same way. */
  CHECK_ERR(colio_sink_void(&snk), COLIO_EINVAL, "COLIO_NTHREADS");
  return finish("invalid environment variable");
}
