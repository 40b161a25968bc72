/*
 * test_free_in_callback.c: freeing other futures from inside a completion
 * callback ("free the batch when the first or last read ends").
 *
 * colio_future_free promises that once it returns, the future's callback
 * ctx is never used again. Before the fix, free(B) called from A's
 * callback (on the notifier) did not wait for B's callback, which was
 * queued behind A's: free returned, the test poisoned B's ctx, and B's
 * callback then ran with it (50 of 50 rounds). Now free(B) on the notifier
 * runs B's pending callback there before it returns.
 *
 * Each round: a batch of reads of a gated callback source. Read 0 answers
 * at once; the others block until read 0's callback opens the gate, so
 * their callbacks are queued behind it. That callback frees every other
 * future and poisons each ctx as soon as free returns. No callback may
 * ever see a poisoned ctx, and every callback runs exactly once.
 */
#include "harness.h"

#define ROUNDS 50
#define BATCH 8
#define CHUNK 4096
#define LIVE 0x11FE11FEu
#define DEAD 0xDEADDEADu

static pthread_mutex_t gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static int gate_open;

static int64_t gated_read(void *ctx, void *buf, int64_t size, int64_t offset) {
  (void)ctx;
  if (offset >= CHUNK) {
    pthread_mutex_lock(&gate_mu);
    while (!gate_open)
      pthread_cond_wait(&gate_cv, &gate_mu);
    pthread_mutex_unlock(&gate_mu);
  }
  fill_pattern((unsigned char *)buf, size, (uint64_t)offset / CHUNK + 1);
  return size;
}

static void gate_set(int open) {
  pthread_mutex_lock(&gate_mu);
  gate_open = open;
  pthread_cond_broadcast(&gate_cv);
  pthread_mutex_unlock(&gate_mu);
}

typedef struct {
  unsigned magic;
  int runs;
  int status;
  int64_t nbytes;
} cb_ctx;

static colio_future *g_futs[BATCH];
static cb_ctx g_ctx[BATCH];
static int g_poisoned_use;  /* a callback ran with a ctx after free returned */
static int g_not_run;       /* free returned before the callback had run */
static int g_free_failed;
static int g_first_done;

static void on_done(void *ctx, colio_future *fut, int status, int64_t nbytes) {
  cb_ctx *c = (cb_ctx *)ctx;
  if (__atomic_load_n(&c->magic, __ATOMIC_SEQ_CST) != LIVE) {
    __atomic_add_fetch(&g_poisoned_use, 1, __ATOMIC_SEQ_CST);
    return;
  }
  c->status = status;
  c->nbytes = nbytes;
  __atomic_add_fetch(&c->runs, 1, __ATOMIC_SEQ_CST);
  if (fut != g_futs[0])
    return;
  /* The first read's callback: let the others finish, then free them. */
  gate_set(1);
  for (int i = 1; i < BATCH; i++) {
    if (colio_future_free(g_futs[i]) != COLIO_OK)
      __atomic_add_fetch(&g_free_failed, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&g_ctx[i].runs, __ATOMIC_SEQ_CST) != 1)
      __atomic_add_fetch(&g_not_run, 1, __ATOMIC_SEQ_CST);
    __atomic_store_n(&g_ctx[i].magic, DEAD, __ATOMIC_SEQ_CST);
  }
  __atomic_store_n(&g_first_done, 1, __ATOMIC_SEQ_CST);
}

/* A callback that frees the future whose callback is running further up
 * the same thread's stack (its caller's): that would wait for itself, so
 * it is refused, and the future stays valid for its owner to free. */
static colio_future *g_outer, *g_inner;
static int g_nested_rc = 1, g_self_rc = 1;

static void inner_done(void *ctx, colio_future *fut, int status, int64_t nbytes) {
  (void)ctx; (void)fut; (void)status; (void)nbytes;
  g_nested_rc = colio_future_free(g_outer);
}

static void outer_done(void *ctx, colio_future *fut, int status, int64_t nbytes) {
  (void)ctx; (void)status; (void)nbytes;
  g_self_rc = colio_future_free(fut); /* its own: refused, as the header says */
  gate_set(1);
  if (colio_future_free(g_inner) != COLIO_OK)
    g_free_failed++;
  __atomic_store_n(&g_first_done, 1, __ATOMIC_SEQ_CST);
}

static void wait_first_done(void) {
  while (!__atomic_load_n(&g_first_done, __ATOMIC_SEQ_CST))
    sleep_ns(100000);
}

int main(void) {
  watchdog(120);
  colio_source_callbacks cb;
  memset(&cb, 0, sizeof cb);
  cb.struct_size = sizeof cb;
  cb.read = gated_read;
  cb.flags = COLIO_CALLBACK_CONCURRENT;
  colio_source *src = NULL;
  OK(colio_source_from_callbacks(&cb, (int64_t)BATCH * CHUNK, &src));
  REQUIRE(src != NULL);

  static unsigned char bufs[BATCH][CHUNK], want[CHUNK];
  int bad_results = 0, bad_bytes = 0; /* callbacks not run once with the result; data */
  for (int round = 0; round < ROUNDS; round++) {
    gate_set(0);
    __atomic_store_n(&g_first_done, 0, __ATOMIC_SEQ_CST);
    colio_range r[BATCH];
    for (int i = 0; i < BATCH; i++) {
      memset(&g_ctx[i], 0, sizeof g_ctx[i]);
      g_ctx[i].magic = LIVE;
      r[i].offset = (int64_t)i * CHUNK;
      r[i].size = CHUNK;
      r[i].buf = bufs[i];
    }
    OK(colio_readv_async(src, r, BATCH, g_futs));
    for (int i = BATCH - 1; i >= 0; i--) /* future 0's last: it frees the rest */
      OK(colio_future_on_done(g_futs[i], on_done, &g_ctx[i]));
    wait_first_done();
    OK(colio_future_free(g_futs[0])); /* waits for its callback to return */
    g_ctx[0].magic = DEAD;
    for (int i = 0; i < BATCH; i++) {
      fill_pattern(want, CHUNK, (uint64_t)i + 1);
      if (g_ctx[i].runs != 1 || g_ctx[i].status != COLIO_OK || g_ctx[i].nbytes != CHUNK)
        bad_results++;
      if (memcmp(bufs[i], want, CHUNK) != 0)
        bad_bytes++;
    }
  }
  /* Late callbacks would show up here, after the last free returned. */
  sleep_ns(50 * 1000000);
  if (g_poisoned_use || g_not_run)
    fprintf(stderr, "callbacks after free returned: %d, free returned before the callback ran: %d "
            "(%d rounds of %d)\n", g_poisoned_use, g_not_run, ROUNDS, BATCH - 1);
  if (bad_results || bad_bytes)
    fprintf(stderr, "callbacks without their result: %d, buffers unlike the generator's: %d\n",
            bad_results, bad_bytes);
  CHECK(bad_results == 0 && bad_bytes == 0);
  CHECK(g_poisoned_use == 0);
  CHECK(g_not_run == 0);
  CHECK(g_free_failed == 0);

  /* Nested: inner's callback, run by free(inner) inside outer's callback,
   * frees outer, whose callback is still running below it. */
  gate_set(0);
  __atomic_store_n(&g_first_done, 0, __ATOMIC_SEQ_CST);
  OK(colio_read_async(src, bufs[0], CHUNK, 0, &g_outer));
  OK(colio_read_async(src, bufs[1], CHUNK, CHUNK, &g_inner));
  OK(colio_future_on_done(g_inner, inner_done, NULL));
  OK(colio_future_on_done(g_outer, outer_done, NULL));
  wait_first_done();
  CHECK(g_self_rc == COLIO_EINVAL);
  CHECK(g_nested_rc == COLIO_EINVAL);
  CHECK(g_free_failed == 0);
  OK(colio_future_free(g_outer)); /* still valid: the refused free freed nothing */

  OK(colio_source_free(src));
  return finish("test_free_in_callback");
}
