/*
 * test_setenv.c: a COLIO_* variable that the program sets with setenv()
 * after libcolio was loaded (the dynamic linker loads it, and starts its Go
 * runtime, before main) but before the first colio call is honoured. Go's
 * own environment is a copy taken at load time; colio reads C's.
 */
#include "harness.h"

int main(void) {
  watchdog(30);
  REQUIRE(setenv("COLIO_NTHREADS", "3", 1) == 0);
  REQUIRE(setenv("COLIO_TASK_SIZE", "1M", 1) == 0);
  int64_t v = 0;
  OK(colio_config_get_int("threads", &v));
  CHECK(v == 3);
  OK(colio_config_get_int("task_size", &v));
  CHECK(v == 1 << 20);
  return finish("COLIO_* set with setenv before the first call");
}
