/*
 * api_lib.c: library-wide entry points (version, settings, counters).
 * See the header comment of main.go for how entry points are built.
 */
#include <string.h>

#include "_cgo_export.h"
#include "colioi.h"

#define STR_(x) #x
#define STR(x) STR_(x)

const char *colio_version(void) {
  return STR(COLIO_VERSION_MAJOR) "." STR(COLIO_VERSION_MINOR) "." STR(COLIO_VERSION_PATCH);
}

int colio_config_set_int(const char *key, int64_t value) {
  COLIOI_ENTER("colio_config_set_int");
  return colioGoConfigSet((char *)key, value);
}

int colio_config_get_int(const char *key, int64_t *out) {
  COLIOI_ENTER("colio_config_get_int");
  COLIOI_NEED("colio_config_get_int", out);
  int64_t v = 0;
  int rc = colioGoConfigGet((char *)key, &v);
  if (rc == COLIO_OK)
    *out = v;
  return rc;
}

int colio_stats(colio_counters *out) {
  COLIOI_ENTER("colio_stats");
  COLIOI_NEED("colio_stats", out);
  const size_t first = offsetof(colio_counters, ops_submitted);
  size_t want = out->struct_size;
  if (want < first + sizeof(int64_t))
    return colioi_fail(COLIO_EINVAL,
                       "colio_stats: out->struct_size is %zu; set it to sizeof(colio_counters) "
                       "(%zu) before the call",
                       want, sizeof(colio_counters));
  colio_counters all;
  memset(&all, 0, sizeof all);
  int rc = colioGoStats(&all);
  if (rc != COLIO_OK)
    return rc;
  colioi_fast_stats(&all);
  /* Fill whole fields only, up to what the caller's struct holds. */
  size_t n = want < sizeof all ? want : sizeof all;
  n = first + (n - first) / sizeof(int64_t) * sizeof(int64_t);
  memcpy((char *)out + first, (const char *)&all + first, n - first);
  return COLIO_OK;
}
