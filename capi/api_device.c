/*
 * api_device.c: colio_has_cuda and the device read/write entry points. The
 * short forms order after the legacy default stream.
 */
#include "_cgo_export.h"
#include "colioi.h"

int colio_has_cuda(void) {
  COLIOI_ENTER("colio_has_cuda");
  return colioGoHasCUDA();
}

int colio_read_device_async_stream(colio_source *src, void *dev_ptr, int64_t size,
                                   int64_t offset, uintptr_t stream, colio_future **out) {
  COLIOI_ENTER("colio_read_device_async");
  COLIOI_NEED("colio_read_device_async", out);
  *out = NULL;
  uintptr_t tok = 0;
  int rc = colioGoReadDeviceAsync((uintptr_t)src, (uintptr_t)dev_ptr, size, offset, stream, &tok,
                                  colioi_tls_level);
  if (rc == COLIO_OK)
    *out = (colio_future *)tok;
  return rc;
}

int colio_read_device_async(colio_source *src, void *dev_ptr, int64_t size, int64_t offset,
                            colio_future **out) {
  return colio_read_device_async_stream(src, dev_ptr, size, offset, COLIO_STREAM_LEGACY, out);
}

int colio_write_device_async_stream(colio_sink *sink, const void *dev_ptr, int64_t size,
                                    int64_t offset, uintptr_t stream, colio_future **out) {
  COLIOI_ENTER("colio_write_device_async");
  COLIOI_NEED("colio_write_device_async", out);
  *out = NULL;
  uintptr_t tok = 0;
  int rc = colioGoWriteDeviceAsync((uintptr_t)sink, (uintptr_t)dev_ptr, size, offset, stream, &tok,
                                   colioi_tls_level);
  if (rc == COLIO_OK)
    *out = (colio_future *)tok;
  return rc;
}

int colio_write_device_async(colio_sink *sink, const void *dev_ptr, int64_t size, int64_t offset,
                             colio_future **out) {
  return colio_write_device_async_stream(sink, dev_ptr, size, offset, COLIO_STREAM_LEGACY, out);
}
