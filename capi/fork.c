/*
 * fork.c: the fork guard.
 *
 * The Go runtime does not survive fork(): only the forking thread exists in
 * the child, while the runtime's state says its other threads (scheduler,
 * GC workers, colio's I/O workers) are still there, holding whatever locks
 * they held. Entering Go in the child can hang or crash. So every entry
 * point checks, in C and before Go is entered, a flag that a pthread_atfork
 * child handler sets, and fails with COLIO_EFORK. The check is one load of
 * a global, not a getpid() system call, because it sits on every call.
 *
 * Raw clone(2) without the atfork handlers, and vfork() children (which may
 * only exec or _exit anyway), are not detected.
 */
#include <pthread.h>

#include "colioi.h"

volatile int colioi_forked;

static void on_fork_child(void) { colioi_forked = 1; }

__attribute__((constructor)) static void colioi_fork_init(void) {
  (void)pthread_atfork(NULL, NULL, on_fork_child);
}

int colioi_fork_error(const char *name) {
  return colioi_fail(COLIO_EFORK,
                     "%s: called in a child process after fork(); the Go runtime inside "
                     "libcolio does not survive fork, so colio cannot be used in this "
                     "process (exec a new program, or fork before the first colio call)",
                     name);
}
