/*
 * test_device.c: the device entry points of the CPU build (libcolio.so).
 * colio_has_cuda() is 0; every device read and write fails with
 * COLIO_ENOTSUP, a message that says how to get the CUDA build, and a NULL
 * future, without touching the pointer; NULL out-parameters are refused
 * first. colio_counters carries the device fields (0 here), and a caller
 * built against the older, shorter struct still gets what it knows.
 */
#include "harness.h"

#include <stddef.h>

int main(void) {
  watchdog(30);
  CHECK(colio_has_cuda() == 0);
  unsigned char data[64];
  fill_pattern(data, sizeof data, 1);
  colio_source *src = NULL;
  colio_sink *snk = NULL;
  REQUIRE(colio_source_from_memory(data, sizeof data, &src) == COLIO_OK);
  REQUIRE(colio_sink_void(&snk) == COLIO_OK);
  /* Not device memory: the CPU build must not even look at it. */
  void *dev = (void *)(uintptr_t)0x1000;
  colio_future *fut = (colio_future *)(uintptr_t)1;
  CHECK_ERR(colio_read_device_async(src, dev, 16, 0, &fut), COLIO_ENOTSUP, "libcolio_cuda.so");
  CHECK(fut == NULL);
  fut = (colio_future *)(uintptr_t)1;
  CHECK_ERR(colio_read_device_async_stream(src, dev, 16, 0, COLIO_STREAM_PER_THREAD, &fut),
            COLIO_ENOTSUP, "built without CUDA");
  CHECK(fut == NULL);
  fut = (colio_future *)(uintptr_t)1;
  CHECK_ERR(colio_write_device_async(snk, dev, 16, COLIO_APPEND, &fut), COLIO_ENOTSUP,
            "fetch-cuda-headers.sh");
  CHECK(fut == NULL);
  fut = (colio_future *)(uintptr_t)1;
  CHECK_ERR(colio_write_device_async_stream(snk, dev, 16, 0, COLIO_STREAM_NONE, &fut),
            COLIO_ENOTSUP, "libcolio_cuda.so");
  CHECK(fut == NULL);
  CHECK_ERR(colio_read_device_async(src, dev, 16, 0, NULL), COLIO_EINVAL, "out");
  CHECK_ERR(colio_write_device_async_stream(snk, dev, 16, 0, COLIO_STREAM_LEGACY, NULL),
            COLIO_EINVAL, "out");
  CHECK(COLIO_STREAM_NONE == 0 && COLIO_STREAM_LEGACY == 1 && COLIO_STREAM_PER_THREAD == 2);

  /* Device counters: present, zero in the CPU build. */
  colio_counters st;
  memset(&st, 0xff, sizeof st);
  st.struct_size = sizeof st;
  OK(colio_stats(&st));
  CHECK(st.device_requests == 0 && st.device_stream_syncs == 0 && st.device_event_waits == 0);
  CHECK(st.device_bytes_to_device == 0 && st.device_bytes_from_device == 0);
  CHECK(st.device_pinned_bytes == 0);
  /* A struct that ends before the device fields (an older header) is
   * filled up to its end and not a byte further. */
  memset(&st, 0xff, sizeof st);
  st.struct_size = offsetof(colio_counters, device_requests);
  OK(colio_stats(&st));
  CHECK(st.queued >= 0);
  CHECK(st.device_requests == -1 && st.device_pinned_bytes == -1);

  OK(colio_sink_free(snk));
  OK(colio_source_free(src));
  return finish("device calls in the CPU build");
}
