/*
 * test_sink_url.c: colio_sink_open_url and colio_sink_abort against
 * colio-testserver's S3 write endpoints ($COLIO_TESTSERVER), started and
 * stopped by this test on a directory it makes. The stored object (a file
 * in that directory) is compared with the generator's bytes; open uploads
 * are the part directories the server keeps under .remotetest-uploads.
 */
#include "harness.h"

#include <dirent.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>

extern char **environ;

#define PART (5 * 1024 * 1024)

static pid_t server_pid;
static int server_stdin = -1;
static char base[128];
static char dir[256];

static void start(void) {
  const char *bin = getenv("COLIO_TESTSERVER");
  REQUIRE(bin != NULL && *bin);
  snprintf(dir, sizeof dir, "%s/colio-sinkurl-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  REQUIRE(mkdtemp(dir) != NULL);
  char bkt[300];
  snprintf(bkt, sizeof bkt, "%s/bkt", dir);
  REQUIRE(mkdir(bkt, 0755) == 0);
  int out[2], in[2];
  REQUIRE(pipe(out) == 0 && pipe(in) == 0);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  posix_spawn_file_actions_addclose(&fa, out[0]);
  posix_spawn_file_actions_addclose(&fa, in[1]);
  char *argv[] = {(char *)bin, (char *)"-dir", dir, (char *)"-stdin", NULL};
  REQUIRE(posix_spawn(&server_pid, bin, &fa, NULL, argv, environ) == 0);
  posix_spawn_file_actions_destroy(&fa);
  close(out[1]);
  close(in[0]);
  server_stdin = in[1];
  char line[256];
  size_t n = 0;
  while (n < sizeof line - 1 && read(out[0], line + n, 1) == 1 && line[n] != '\n')
    n++;
  line[n] = '\0';
  close(out[0]);
  REQUIRE(sscanf(line, "listening on %127s", base) == 1);
}

static void stop(void) {
  kill(server_pid, SIGTERM);
  close(server_stdin);
  int st;
  waitpid(server_pid, &st, 0);
}

/* The stored object's bytes (NULL if absent); *n its size. */
static unsigned char *stored(const char *key, int64_t *n) {
  char p[400];
  snprintf(p, sizeof p, "%s/bkt/%s", dir, key);
  FILE *f = fopen(p, "rb");
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  *n = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *b = (unsigned char *)xmalloc((size_t)*n + 1);
  REQUIRE(fread(b, 1, (size_t)*n, f) == (size_t)*n);
  fclose(f);
  return b;
}

static int open_uploads(void) {
  char p[300];
  snprintf(p, sizeof p, "%s/.remotetest-uploads", dir);
  DIR *d = opendir(p);
  if (!d)
    return 0;
  int k = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL)
    if (e->d_type == DT_DIR && e->d_name[0] != '.')
      k++;
  closedir(d);
  return k;
}

static colio_sink *open_sink(const char *key, const char *fault) {
  char url[200], ep[300];
  snprintf(url, sizeof url, "s3://bkt/%s", key);
  snprintf(ep, sizeof ep, "endpoint_url=%s%s", base, fault);
  const char *opts[] = {ep, "anon=1", "part_size=5242880", NULL};
  colio_sink *k = NULL;
  OK(colio_sink_open_url(url, opts, 0, &k));
  REQUIRE(k != NULL);
  return k;
}

/* Writes n generator bytes as 7 chunks: the first two appended, the rest at
 * their offsets, last first. */
static void write_chunks(colio_sink *k, const unsigned char *data, int64_t n, colio_future **futs) {
  int64_t edge[8];
  for (int i = 0; i <= 7; i++)
    edge[i] = n * i / 7;
  for (int i = 0; i < 2; i++)
    OK(colio_write_async(k, data + edge[i], edge[i + 1] - edge[i], COLIO_APPEND, &futs[i]));
  for (int i = 6; i >= 2; i--)
    OK(colio_write_async(k, data + edge[i], edge[i + 1] - edge[i], edge[i], &futs[i]));
}

static void test_published_at_free(void) {
  int64_t n = 3 * PART + 4321;
  unsigned char *data = (unsigned char *)xmalloc((size_t)n);
  fill_pattern(data, n, 18);
  colio_sink *k = open_sink("obj", "");
  colio_future *futs[7];
  write_chunks(k, data, n, futs);
  int64_t got = 0;
  CHECK(stored("obj", &got) == NULL); /* nothing before free */
  OK(colio_sink_free(k));
  for (int i = 0; i < 7; i++) {
    OK(colio_future_wait(futs[i], COLIO_WAIT_FOREVER, NULL));
    colio_future_free(futs[i]);
  }
  unsigned char *b = stored("obj", &got);
  CHECK(b != NULL && got == n && memcmp(b, data, (size_t)n) == 0);
  CHECK(open_uploads() == 0);
  free(b);
  free(data);
}

static void test_abort_and_rejected_part(void) {
  int64_t n = 3 * PART;
  unsigned char *data = (unsigned char *)xmalloc((size_t)n);
  fill_pattern(data, n, 19);
  colio_future *futs[7];
  colio_sink *k = open_sink("aborted", "");
  write_chunks(k, data, n, futs);
  OK(colio_sink_abort(k));
  for (int i = 0; i < 7; i++)
    colio_future_free(futs[i]); /* waits: each has either succeeded or failed */
  int64_t got;
  CHECK(stored("aborted", &got) == NULL);

  k = open_sink("rejected", "/_fault/rejectpart=2");
  write_chunks(k, data, n, futs);
  CHECK_ERR(colio_sink_free(k), COLIO_EIO, "InvalidRequest");
  CHECK(colio_last_errno() == EIO);
  int failed = 0;
  for (int i = 0; i < 7; i++) {
    failed += colio_future_wait(futs[i], COLIO_WAIT_FOREVER, NULL) != COLIO_OK;
    colio_future_free(futs[i]);
  }
  CHECK(failed > 0);
  CHECK(stored("rejected", &got) == NULL);
  CHECK(open_uploads() == 0);
  OK(colio_sink_abort(NULL));
  free(data);
}

static void test_bad_arguments(void) {
  colio_sink *k = (colio_sink *)1;
  CHECK_ERR(colio_sink_open_url(NULL, NULL, 0, &k), COLIO_EINVAL, "url is NULL");
  CHECK(k == NULL);
  CHECK_ERR(colio_sink_open_url("s3://bkt/x", NULL, 8, &k), COLIO_EINVAL, "flags");
  CHECK_ERR(colio_sink_open_url("https://example.com/x", NULL, 0, &k), COLIO_ENOTSUP, "s3://");
  const char *small[] = {"anon=1", "part_size=1000", NULL};
  CHECK_ERR(colio_sink_open_url("s3://bkt/x", small, 0, &k), COLIO_EINVAL, "part_size");
}

int main(void) {
  watchdog(120);
  start();
  test_published_at_free();
  test_abort_and_rejected_part();
  test_bad_arguments();
  stop();
  return finish("test_sink_url");
}
