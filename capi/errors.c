/*
 * errors.c: colio_last_error() and colio_last_errno().
 *
 * The last error lives in C thread-local storage so that it is per calling
 * thread and readable without entering Go (it works in a forked child too,
 * where it tells why the call failed). Go code that colio's entry points
 * call runs on the caller's OS thread, so Go can write it there.
 *
 * The message buffer is malloc'd and grows as needed (panic messages carry
 * a stack); a pthread key destructor frees it when the thread exits, so
 * threads that come and go do not leak.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "colioi.h"

typedef struct {
  char *msg;
  size_t cap;
  int errnum;
} colioi_err;

static _Thread_local colioi_err *tls_err;
static pthread_key_t err_key;
static pthread_once_t err_once = PTHREAD_ONCE_INIT;

/* Used when even the error record cannot be allocated. */
static const char oom_msg[] = "colio: out of memory while recording an error message";
static _Thread_local int tls_oom;

static void err_free(void *p) {
  colioi_err *e = p;
  if (e) {
    free(e->msg);
    free(e);
  }
  tls_err = NULL;
}

static void err_key_init(void) { (void)pthread_key_create(&err_key, err_free); }

static colioi_err *err_get(void) {
  if (tls_err)
    return tls_err;
  (void)pthread_once(&err_once, err_key_init);
  colioi_err *e = calloc(1, sizeof *e);
  if (!e)
    return NULL;
  if (pthread_setspecific(err_key, e) != 0) {
    free(e);
    return NULL;
  }
  tls_err = e;
  return e;
}

int colioi_set_error(int code, int errnum, const char *msg, size_t len) {
  colioi_err *e = err_get();
  if (!e) {
    tls_oom = 1;
    return code;
  }
  if (len + 1 > e->cap) {
    size_t cap = len + 1 < 256 ? 256 : len + 1;
    char *m = realloc(e->msg, cap);
    if (!m) {
      tls_oom = 1;
      e->errnum = errnum;
      return code;
    }
    e->msg = m;
    e->cap = cap;
  }
  if (len)
    memcpy(e->msg, msg, len);
  e->msg[len] = '\0';
  e->errnum = errnum;
  tls_oom = 0;
  return code;
}

int colioi_fail(int code, const char *fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n < 0)
    n = 0;
  if ((size_t)n >= sizeof buf)
    n = sizeof buf - 1;
  return colioi_set_error(code, 0, buf, (size_t)n);
}

const char *colio_last_error(void) {
  if (tls_oom)
    return oom_msg;
  return tls_err && tls_err->msg ? tls_err->msg : "";
}

int colio_last_errno(void) { return tls_err ? tls_err->errnum : 0; }
