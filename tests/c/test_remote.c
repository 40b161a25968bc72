/*
 * test_remote.c: colio_source_open_url against a loopback server the test
 * starts and stops itself: colio-testserver (cmd/colio-testserver, built
 * by the Makefile; its path in $COLIO_TESTSERVER), serving a directory
 * this test writes, with faults chosen by a /_fault/MODE/ path prefix.
 * Byte checks compare with the generator's bytes (fill_pattern). Also
 * colio_fetch_urls, whole objects fetched by the library (check_fetch).
 */
#include "harness.h"

#include <spawn.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>

extern char **environ;

#define OBJ_SIZE (3 * 1024 * 1024 + 17)

static pid_t server_pid;
static int server_stdin = -1;
static char base[128];

/* Starts the server on dir; base becomes its http://127.0.0.1:PORT. Its
 * stdin is a pipe of ours (-stdin): if this test dies, so does it. */
static void start_server(const char *dir) {
  const char *bin = getenv("COLIO_TESTSERVER");
  REQUIRE(bin != NULL && *bin);
  int out[2], in[2];
  REQUIRE(pipe(out) == 0 && pipe(in) == 0);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  posix_spawn_file_actions_addclose(&fa, out[0]);
  posix_spawn_file_actions_addclose(&fa, in[1]);
  char *argv[] = {(char *)bin, (char *)"-dir", (char *)dir, (char *)"-stdin", NULL};
  REQUIRE(posix_spawn(&server_pid, bin, &fa, NULL, argv, environ) == 0);
  posix_spawn_file_actions_destroy(&fa);
  close(out[1]);
  close(in[0]);
  server_stdin = in[1];
  char line[256];
  size_t n = 0;
  while (n < sizeof line - 1) { /* the first line: "listening on URL" */
    ssize_t r = read(out[0], line + n, 1);
    REQUIRE(r == 1);
    if (line[n] == '\n')
      break;
    n++;
  }
  line[n] = '\0';
  close(out[0]);
  REQUIRE(sscanf(line, "listening on %127s", base) == 1);
}

static void stop_server(void) {
  kill(server_pid, SIGTERM);
  close(server_stdin);
  int st;
  waitpid(server_pid, &st, 0);
}

static char *url(const char *path) {
  static char buf[512];
  snprintf(buf, sizeof buf, "%s%s", base, path);
  return buf;
}

static unsigned char *expect;

/* Reads [off, off+n) of src every way and checks the bytes. */
static void check_reads(colio_source *src) {
  int64_t size = 0;
  OK(colio_source_size(src, &size));
  CHECK(size == OBJ_SIZE);
  unsigned char *buf = (unsigned char *)xmalloc(OBJ_SIZE);
  int64_t n = 0;
  OK(colio_read(src, buf, 1000, 12345, &n));
  CHECK(n == 1000 && memcmp(buf, expect + 12345, 1000) == 0);
  /* A fan-out: the whole object in 48 ranges, one of them past the end. */
  colio_range r[48];
  colio_future *f[48];
  int64_t part = OBJ_SIZE / 47 + 1;
  for (int i = 0; i < 48; i++) {
    r[i].offset = i * part < OBJ_SIZE ? i * part : OBJ_SIZE;
    r[i].size = part;
    r[i].buf = buf + r[i].offset;
  }
  memset(buf, 0, OBJ_SIZE);
  OK(colio_readv_async(src, r, 48, f));
  int64_t total = 0;
  for (int i = 0; i < 48; i++) {
    OK(colio_future_wait(f[i], COLIO_WAIT_FOREVER, &n));
    total += n;
    colio_future_free(f[i]);
  }
  CHECK(total == OBJ_SIZE && memcmp(buf, expect, OBJ_SIZE) == 0);
  /* A read-ahead stream over the same source. */
  colio_stream *st = NULL;
  OK(colio_stream_open(src, 0, 64 << 10, 4, &st));
  if (st) {
    memset(buf, 0, OBJ_SIZE);
    int64_t got = 0;
    while (got < OBJ_SIZE) {
      OK(colio_stream_read(st, buf + got, 100000, &n));
      if (n <= 0)
        break;
      got += n;
    }
    CHECK(got == OBJ_SIZE && memcmp(buf, expect, OBJ_SIZE) == 0);
    colio_stream_free(st);
  }
  free(buf);
}

/* colio_fetch_urls: whole objects, ended through a completion queue.
 * bkt/obj is larger than the prefetch (the rest comes in parallel parts),
 * the small and empty objects are one GET each, a missing one fails alone
 * with its own status and message. */
static void check_fetch(const char *dir) {
  enum { SMALL = 4096, N = 5 };
  char small_path[256], empty_path[256];
  snprintf(small_path, sizeof small_path, "%s/bkt/small", dir);
  snprintf(empty_path, sizeof empty_path, "%s/bkt/empty", dir);
  write_file(small_path, expect + 7, SMALL);
  write_file(empty_path, expect, 0);
  char u[N][512];
  const char *paths[N] = {"/bkt/obj", "/bkt/small", "/bkt/missing", "/bkt/empty", "/bkt/small"};
  const char *urls[N];
  for (int i = 0; i < N; i++) {
    snprintf(u[i], sizeof u[i], "%s%s", base, paths[i]);
    urls[i] = u[i];
  }
  const int64_t want[N] = {OBJ_SIZE, SMALL, 0, 0, SMALL};
  const unsigned char *bytes[N] = {expect, expect + 7, NULL, expect, expect + 7};
  const char *opts[] = {"prefetch=65536", "request_size=262144", "max_in_flight=3", NULL};
  colio_cq *cq = NULL;
  OK(colio_cq_new(&cq));
  colio_future *f = NULL;
  OK(colio_fetch_urls(urls, N, opts, cq, 1000, &f));
  int seen[N] = {0};
  colio_cq_entry e[N];
  int got = 0;
  while (got < N) {
    int64_t k = 0;
    OK(colio_cq_wait(cq, e, N, COLIO_WAIT_FOREVER, &k));
    for (int64_t j = 0; j < k; j++, got++) {
      int i = (int)(e[j].ctx - 1000);
      REQUIRE(i >= 0 && i < N && !seen[i]);
      seen[i] = 1;
      unsigned char *buf = (unsigned char *)xmalloc((size_t)want[i] + 1);
      int64_t n = -1;
      if (i == 2) {
        CHECK(e[j].status == COLIO_ENOTFOUND && e[j].nbytes == 0);
        CHECK_ERR(colio_fetch_copy(f, i, buf, 1, &n), COLIO_ENOTFOUND, "NoSuchKey");
        CHECK(colio_last_errno() == ENOENT);
      } else {
        CHECK(e[j].status == COLIO_OK && e[j].nbytes == want[i]);
        if (want[i] > 0) /* too small a buffer takes nothing */
          CHECK_ERR(colio_fetch_copy(f, i, buf, want[i] - 1, &n), COLIO_EINVAL, "more than");
        OK(colio_fetch_copy(f, i, buf, want[i] + 1, &n));
        CHECK(n == want[i] && memcmp(buf, bytes[i], (size_t)n) == 0);
        CHECK_ERR(colio_fetch_copy(f, i, buf, want[i] + 1, &n), COLIO_EINVAL, "already");
      }
      free(buf);
    }
  }
  int64_t total = 0;
  CHECK_RC(colio_future_wait(f, COLIO_WAIT_FOREVER, &total), COLIO_ENOTFOUND);
  CHECK(total == OBJ_SIZE + 2 * SMALL);
  int64_t n = 0;
  CHECK_ERR(colio_fetch_copy(f, N, NULL, 0, &n), COLIO_EINVAL, "out of range");
  OK(colio_future_free(f));

  /* No queue: the future alone; freeing it unread drops the bytes. */
  OK(colio_fetch_urls(urls + 1, 1, NULL, NULL, 0, &f));
  CHECK_RC(colio_future_wait(f, COLIO_WAIT_FOREVER, &total), COLIO_OK);
  CHECK(total == SMALL);
  OK(colio_future_free(f));
  OK(colio_fetch_urls(urls, 0, NULL, cq, 0, &f)); /* nothing to fetch: done at once */
  CHECK(colio_future_done(f) == 1);
  OK(colio_future_free(f));

  /* Checked before anything starts. */
  const char *unknown[] = {"max_inflight=4", NULL};
  CHECK_ERR(colio_fetch_urls(urls, N, unknown, cq, 0, &f), COLIO_EINVAL, "max_inflight");
  CHECK(f == NULL);
  const char *holes[] = {urls[0], NULL};
  CHECK_ERR(colio_fetch_urls(holes, 2, NULL, cq, 0, &f), COLIO_EINVAL, "urls[1]");
  CHECK_ERR(colio_fetch_urls(NULL, 1, NULL, cq, 0, &f), COLIO_EINVAL, "urls");
  CHECK_ERR(colio_fetch_urls(urls, -1, NULL, cq, 0, &f), COLIO_EINVAL, "negative");
  CHECK_ERR(colio_fetch_urls(urls, 1, NULL, NULL, 0, NULL), COLIO_EINVAL, "out");
  /* A future that is not a fetch. */
  colio_source *src = NULL;
  OK(colio_source_open_url(urls[1], NULL, &src));
  unsigned char b[8];
  OK(colio_read_async(src, b, 8, 0, &f));
  OK(colio_future_wait(f, COLIO_WAIT_FOREVER, &n));
  CHECK_ERR(colio_fetch_copy(f, 0, b, 8, &n), COLIO_EINVAL, "not a fetch");
  colio_future_free(f);
  colio_source_free(src);
  OK(colio_cq_free(cq));
  unlink(small_path);
  unlink(empty_path);
}

/* colio_source_etag: the length alone, a buffer too small, the value; the
 * object opened again with it and size= reads the same bytes, and with
 * another ETag fails with ESTALE; a file source has none. */
static void check_etag(colio_source *src) {
  size_t n = 99;
  int stable = -1;
  OK(colio_source_etag(src, NULL, 0, &n, NULL));
  CHECK(n > 2);
  char small[2];
  CHECK_ERR(colio_source_etag(src, small, sizeof small, &n, NULL), COLIO_EINVAL, "needs");
  char etag[256];
  OK(colio_source_etag(src, etag, sizeof etag, NULL, &stable));
  CHECK(strlen(etag) == n && etag[0] == '"');
  CHECK(stable == 1); /* main dated the file an hour back */
  char eopt[300], sopt[64];
  snprintf(eopt, sizeof eopt, "etag=%s", etag);
  snprintf(sopt, sizeof sopt, "size=%d", OBJ_SIZE);
  const char *again[] = {eopt, sopt, NULL};
  colio_source *same = NULL;
  OK(colio_source_open_url(url("/bkt/obj"), again, &same));
  unsigned char buf[4096];
  int64_t got = 0;
  OK(colio_read(same, buf, sizeof buf, 1000, &got));
  CHECK(got == (int64_t)sizeof buf && memcmp(buf, expect + 1000, sizeof buf) == 0);
  OK(colio_source_free(same));
  const char *other[] = {"etag=\"not-it\"", sopt, NULL};
  OK(colio_source_open_url(url("/bkt/obj"), other, &same));
  CHECK_ERR(colio_read(same, buf, sizeof buf, 0, &got), COLIO_EIO, "changed since open");
  CHECK(colio_last_errno() == ESTALE);
  OK(colio_source_free(same));
  colio_source *file = NULL;
  OK(colio_source_open_file("/proc/self/exe", &file));
  n = 7;
  stable = 1;
  OK(colio_source_etag(file, etag, sizeof etag, &n, &stable));
  CHECK(n == 0 && etag[0] == 0 && stable == 0);
  OK(colio_source_free(file));
}

int main(void) {
  watchdog(120);
  /* The served directory: bkt/obj is the pattern. */
  char dir[] = "/tmp/colio-remote-XXXXXX";
  REQUIRE(mkdtemp(dir) != NULL);
  char path[256];
  snprintf(path, sizeof path, "%s/bkt", dir);
  REQUIRE(mkdir(path, 0755) == 0);
  snprintf(path, sizeof path, "%s/bkt/obj", dir);
  expect = (unsigned char *)xmalloc(OBJ_SIZE);
  fill_pattern(expect, OBJ_SIZE, 14);
  write_file(path, expect, OBJ_SIZE);
  /* Modified an hour ago: its ETag is stable (colio_source_etag). */
  struct timeval back[2];
  gettimeofday(&back[0], NULL);
  back[0].tv_sec -= 3600;
  back[1] = back[0];
  REQUIRE(utimes(path, back) == 0);
  start_server(dir);

  /* Plain HTTP, threads=1: the fan-out still runs many requests at once. */
  OK(colio_config_set_int("threads", 1));
  const char *split[] = {"request_size=262144", "max_in_flight=32", NULL};
  colio_source *src = NULL;
  OK(colio_source_open_url(url("/bkt/obj"), split, &src));
  if (src) {
    check_reads(src);
    check_etag(src);
    OK(colio_source_free(src));
  }

  /* S3, path-style against the same server, anonymous. */
  char ep[160];
  snprintf(ep, sizeof ep, "endpoint_url=%s", base);
  const char *s3[] = {ep, "anon=1", NULL};
  OK(colio_source_open_url("s3://bkt/obj", s3, &src));
  if (src) {
    check_reads(src);
    OK(colio_source_free(src));
  }
  check_fetch(dir);

  /* Faults: each ends in its documented outcome, within its timeout. */
  const char *quick[] = {"retries=2", "first_byte_timeout=0.3", "idle_timeout=0.3", NULL};
  unsigned char b[64];
  int64_t n = 0;
  OK(colio_source_open_url(url("/_fault/503=2/bkt/obj"), NULL, &src)); /* retried at open */
  if (src) {
    OK(colio_read(src, b, 64, 100, &n));
    CHECK(n == 64 && memcmp(b, expect + 100, 64) == 0);
    colio_source_free(src);
  }
  const char *sized[] = {"size=3145745", NULL};
  OK(colio_source_open_url(url("/_fault/drop=1/bkt/obj"), sized, &src)); /* retried mid-body */
  if (src) {
    unsigned char *big = (unsigned char *)xmalloc(1 << 20);
    OK(colio_read(src, big, 1 << 20, 5, &n));
    CHECK(n == 1 << 20 && memcmp(big, expect + 5, 1 << 20) == 0);
    free(big);
    colio_source_free(src);
  }
  struct {
    const char *path;
    int code, err;
    const char *msg;
  } faults[] = {
      {"/_fault/norange/bkt/obj", COLIO_EIO, EPROTO, "ignored the Range header"},
      {"/_fault/badrange/bkt/obj", COLIO_EIO, EPROTO, "Content-Range"},
      {"/_fault/short/bkt/obj", COLIO_EIO, EPROTO, "a body of 63 bytes"},
      {"/_fault/etag/bkt/obj", COLIO_EIO, ESTALE, "changed since open"},
      {"/_fault/trickle=1s/bkt/obj", COLIO_ETIMEDOUT, ETIMEDOUT, "idle_timeout"},
      {"/_fault/hang=get/bkt/obj", COLIO_ETIMEDOUT, ETIMEDOUT, "first_byte_timeout"},
      {"/_fault/s3=ExpiredToken/bkt/obj", COLIO_EIO, EACCES, "ExpiredToken"},
  };
  for (size_t i = 0; i < sizeof faults / sizeof faults[0]; i++) {
    int open_rc = colio_source_open_url(url(faults[i].path), quick, &src);
    if (open_rc != COLIO_OK) { /* s3=...: every answer is the error, HEAD too */
      CHECK(open_rc == faults[i].code && colio_last_errno() == faults[i].err);
      CHECK(strstr(colio_last_error(), "HTTP") != NULL);
      continue;
    }
    colio_future *f = NULL;
    OK(colio_read_async(src, b, 64, 10, &f));
    int rc = colio_future_wait(f, COLIO_WAIT_FOREVER, &n);
    int err = 0;
    const char *msg = NULL;
    colio_future_error(f, &msg, &err);
    if (rc != faults[i].code || err != faults[i].err || !msg || !strstr(msg, faults[i].msg)) {
      fprintf(stderr, "%s: rc %d errno %d \"%s\"; want %d %d \"%s\"\n", faults[i].path, rc, err,
              msg ? msg : "", faults[i].code, faults[i].err, faults[i].msg);
      t_failures++;
    }
    colio_future_free(f);
    colio_source_free(src);
  }
  CHECK_ERR(colio_source_open_url(url("/_fault/hang/bkt/obj"), quick, &src), COLIO_ETIMEDOUT, "HEAD");
  CHECK(src == NULL);
  CHECK_ERR(colio_source_open_url(url("/bkt/missing"), NULL, &src), COLIO_ENOTFOUND, "NoSuchKey");
  CHECK(colio_last_errno() == ENOENT);
  CHECK_ERR(colio_source_open_url(url("/nobkt/obj"), NULL, &src), COLIO_ENOTFOUND, "NoSuchBucket");
  CHECK_ERR(colio_source_open_url(url("/_fault/s3=AccessDenied/bkt/obj"), NULL, &src), COLIO_EIO, "403");
  CHECK(colio_last_errno() == EACCES);

  /* Bad arguments. */
  const char *unknown[] = {"max_inflight=4", NULL};
  CHECK_ERR(colio_source_open_url(url("/bkt/obj"), unknown, &src), COLIO_EINVAL, "max_inflight");
  const char *bad[] = {"retries=many", NULL};
  CHECK_ERR(colio_source_open_url(url("/bkt/obj"), bad, &src), COLIO_EINVAL, "retries");
  const char *s3only[] = {"anon=1", NULL};
  CHECK_ERR(colio_source_open_url(url("/bkt/obj"), s3only, &src), COLIO_EINVAL, "anon");
  CHECK_ERR(colio_source_open_url("ftp://example.invalid/x", NULL, &src), COLIO_ENOTSUP, "ftp");
  CHECK_ERR(colio_source_open_url(NULL, NULL, &src), COLIO_EINVAL, "url");
  CHECK_ERR(colio_source_open_url(url("/bkt/obj"), NULL, NULL), COLIO_EINVAL, "out");

  /* Freeing a source while a read waits on a silent server fails the read
   * with COLIO_ECLOSED at once instead of waiting out the timeouts. */
  OK(colio_source_open_url(url("/_fault/hang=get/bkt/obj"), NULL, &src));
  if (src) {
    colio_future *f = NULL;
    OK(colio_read_async(src, b, 64, 0, &f));
    sleep_ns(100 * 1000 * 1000);
    CHECK(colio_future_done(f) == 0);
    OK(colio_source_free(src));
    CHECK_RC(colio_future_wait(f, COLIO_WAIT_FOREVER, &n), COLIO_ECLOSED);
    colio_future_free(f);
  }

  stop_server();
  /* A refused connection fails fast, naming it. */
  CHECK_ERR(colio_source_open_url(url("/bkt/obj"), NULL, &src), COLIO_EIO, "refused");
  CHECK(colio_last_errno() == ECONNREFUSED);
  unlink(path);
  snprintf(path, sizeof path, "%s/bkt", dir);
  rmdir(path);
  rmdir(dir);
  free(expect);
  return finish("test_remote");
}
