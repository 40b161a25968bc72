/*
 * api_coalesce.c: coalesced fan-out reads and the per-source coalescing
 * settings (issue 16).
 */
#include "_cgo_export.h"
#include "colioi.h"

int colio_readv_async_ex(colio_source *src, const colio_range *ranges, int64_t n,
                         uint32_t flags, colio_future **futures_out) {
  COLIOI_ENTER("colio_readv_async_ex");
  return colioGoReadvAsyncEx((uintptr_t)src, (void *)ranges, n, flags, (void *)futures_out,
                             colioi_tls_level);
}

int colio_source_set_coalesce(colio_source *src, int64_t hole, int64_t max) {
  COLIOI_ENTER("colio_source_set_coalesce");
  return colioGoSourceSetCoalesce((uintptr_t)src, hole, max);
}

int colio_source_get_coalesce(colio_source *src, int64_t *hole, int64_t *max) {
  COLIOI_ENTER("colio_source_get_coalesce");
  return colioGoSourceGetCoalesce((uintptr_t)src, hole, max);
}
