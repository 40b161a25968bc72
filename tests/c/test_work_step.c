/*
 * test_work_step.c: reads whose end goes to the workers
 * (colio_read_async_tagged, colio_work_step): one note per read with its
 * tag, bytes and status; the library frees a done or cancelled read's
 * future and leaves a failed one's valid for its message; cancel and free
 * make notes too; a worker is told COLIO_ECLOSED only once no note is
 * left; colio_work_wait takes nothing; other sources are refused. Bytes
 * against the generator.
 */
#include "harness.h"

#define SIZE (1 << 20)
#define N 64
static unsigned char ref[SIZE];

static unsigned char gen(int64_t off) { return (unsigned char)((off * 131 + 7) >> 3); }

static int64_t run_part(const colio_work *w) {
  if (w->offset % 4096 == 1024)
    return -EACCES; /* fails: its future keeps the error */
  memcpy(w->buf, ref + w->offset, (size_t)w->size);
  return w->size;
}

/* One worker's loop: runs parts, collects notes; returns how many notes
 * it got into seen (indexed by tag), until no source is open. */
static int seen_status[N + 2];
static int64_t seen_bytes[N + 2];
static colio_future *seen_future[N + 2];
static int seen_count[N + 2];

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int seen_total;

static void note(const colio_work_note *n) {
  CHECK(n->tag >= 1 && n->tag <= N + 1);
  pthread_mutex_lock(&mu);
  seen_total++;
  seen_count[n->tag]++;
  seen_status[n->tag] = n->status;
  seen_bytes[n->tag] = n->nbytes;
  seen_future[n->tag] = n->future;
  pthread_mutex_unlock(&mu);
}

static void work_until_closed(void) {
  colio_work w;
  colio_work_note notes[8];
  int64_t tok = 0, res = 0, k = 0;
  for (;;) {
    int rc = colio_work_step(tok, res, 20000000, &w, notes, 8, &k);
    tok = 0;
    for (int64_t i = 0; i < k; i++)
      note(&notes[i]);
    if (rc == COLIO_OK) {
      if (w.token) {
        res = run_part(&w);
        tok = w.token;
      }
      continue;
    }
    if (rc == COLIO_ECLOSED) {
      CHECK(k == 0);
      return;
    }
    CHECK_RC(rc, COLIO_ETIMEDOUT);
  }
}

static void *worker(void *arg) {
  (void)arg;
  work_until_closed();
  return NULL;
}

int main(void) {
  for (int64_t i = 0; i < SIZE; i++)
    ref[i] = gen(i);
  OK(colio_config_set_int("python_workers", 2));

  /* Other sources would leave their notes with nobody. */
  colio_source *mem = NULL;
  OK(colio_source_from_memory(ref, SIZE, &mem));
  unsigned char b0[16];
  colio_future *f0 = NULL;
  CHECK_ERR(colio_read_async_tagged(mem, b0, 16, 0, 1, &f0), COLIO_EINVAL, "queued source");
  CHECK(f0 == NULL);
  colio_source_free(mem);

  /* Reads before any worker runs: one is cancelled while queued. */
  colio_source *src = NULL;
  OK(colio_source_from_queue(SIZE, COLIO_CALLBACK_CONCURRENT, (void *)1, &src));
  static unsigned char bufs[N][4096];
  colio_future *futs[N];
  for (int i = 0; i < N; i++) {
    memset(bufs[i], 0, sizeof bufs[i]);
    OK(colio_read_async_tagged(src, bufs[i], 4000, (int64_t)i * 4096 + (i % 3 ? 0 : 1024),
                               (uint64_t)i + 1, &futs[i]));
  }
  int cancelled = 0;
  OK(colio_future_cancel(futs[5], &cancelled));
  CHECK(cancelled == 1);

  pthread_t t[2];
  for (int i = 0; i < 2; i++)
    CHECK(pthread_create(&t[i], NULL, worker, NULL) == 0);
  /* Every read ends with a note; only then is the source closed, which
   * ends the workers. (A done read's future is gone once its note is out:
   * the notes are the way to learn how it ended.) */
  for (int tries = 0;; tries++) {
    pthread_mutex_lock(&mu);
    int seen = seen_total;
    pthread_mutex_unlock(&mu);
    if (seen >= N)
      break;
    REQUIRE(tries < 10000); /* a 10 s watchdog */
    sleep_ns(1000000);
  }
  colio_source_free(src);
  for (int i = 0; i < 2; i++)
    pthread_join(t[i], NULL);
  for (int i = 0; i < N; i++)
    if (i != 5 && i % 3 != 0)
      CHECK(memcmp(bufs[i], ref + (int64_t)i * 4096, 4000) == 0);

  for (int i = 0; i < N; i++) {
    int tag = i + 1;
    CHECK(seen_count[tag] == 1);
    CHECK(seen_future[tag] == futs[i]);
    if (i == 5 || i % 3 != 0) {
      /* Done or cancelled: freed by the library already. */
      CHECK(seen_status[tag] == (i == 5 ? COLIO_ECANCELLED : COLIO_OK));
      CHECK(colio_future_done(futs[i]) == COLIO_EINVAL);
      if (i != 5)
        CHECK(seen_bytes[tag] == 4000);
    } else {
      /* Failed: still valid, with its message, for the caller to free. */
      CHECK(seen_status[tag] == COLIO_ECALLBACK);
      const char *msg = NULL;
      int err = 0;
      CHECK_RC(colio_future_error(futs[i], &msg, &err), COLIO_ECALLBACK);
      CHECK(err == EACCES && msg && strstr(msg, "offset"));
      OK(colio_future_free(futs[i]));
    }
  }

  /* A read a free fails while queued still makes its note, and the
   * worker collects it before it is told that no source is open. */
  OK(colio_source_from_queue(SIZE, COLIO_CALLBACK_CONCURRENT, (void *)1, &src));
  colio_future *late = NULL;
  OK(colio_read_async_tagged(src, b0, 16, 0, N + 1, &late));
  colio_source_free(src);
  work_until_closed();
  CHECK(seen_count[N + 1] == 1 && seen_status[N + 1] == COLIO_ECLOSED);
  OK(colio_future_free(late));

  /* colio_work_wait says a part is there and leaves it for a poll. */
  OK(colio_source_from_queue(SIZE, COLIO_CALLBACK_CONCURRENT, (void *)1, &src));
  colio_future *one = NULL;
  OK(colio_read_async_tagged(src, b0, 16, 4096 * 3 + 16, 1, &one));
  OK(colio_work_wait(10 * 1000000000LL));
  OK(colio_work_wait(0)); /* still there: nothing was taken */
  {
    colio_work w;
    colio_work_note nt[2];
    int64_t k = 0;
    OK(colio_work_step(0, 0, 0, &w, nt, 2, &k));
    CHECK(w.token != 0 && k == 0 && w.offset == 4096 * 3 + 16 && w.size == 16);
    memcpy(w.buf, ref + w.offset, 16);
    CHECK_RC(colio_work_wait(0), COLIO_ETIMEDOUT);
    OK(colio_work_step(w.token, 16, 0, &w, nt, 2, &k));
    CHECK(k == 1 && nt[0].tag == 1 && nt[0].status == COLIO_OK && nt[0].nbytes == 16);
    CHECK(memcmp(b0, ref + 4096 * 3 + 16, 16) == 0);
  }
  colio_source_free(src);
  CHECK_RC(colio_work_wait(0), COLIO_ECLOSED);

  /* Arguments. */
  colio_work w;
  int64_t k = 0;
  CHECK_ERR(colio_work_step(0, 0, 0, &w, NULL, 4, &k), COLIO_EINVAL, "max_notes");
  CHECK_ERR(colio_work_step(987654, 1, 0, &w, NULL, 0, &k), COLIO_EINVAL, "token");
  CHECK_RC(colio_work_step(0, 0, 0, &w, NULL, 0, &k), COLIO_ECLOSED);
  return finish("test_work_step");
}
