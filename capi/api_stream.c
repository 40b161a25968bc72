/*
 * api_stream.c: the colio_stream_* entry points (read-ahead streams).
 */
#include "_cgo_export.h"
#include "colioi.h"

int colio_stream_open(colio_source *src, int64_t offset, int64_t buffer_size, int64_t depth,
                      colio_stream **out) {
  COLIOI_ENTER("colio_stream_open");
  COLIOI_NEED("colio_stream_open", out);
  *out = NULL;
  uintptr_t tok = 0;
  int rc = colioGoStreamOpen((uintptr_t)src, offset, buffer_size, depth, &tok, colioi_tls_level);
  if (rc == COLIO_OK)
    *out = (colio_stream *)tok;
  return rc;
}

int colio_stream_read(colio_stream *stream, void *buf, int64_t size, int64_t *nread) {
  COLIOI_ENTER("colio_stream_read");
  COLIOI_NEED("colio_stream_read", nread);
  *nread = 0;
  return colioGoStreamRead((uintptr_t)stream, buf, size, nread);
}

int colio_stream_seek(colio_stream *stream, int64_t offset, int whence, int64_t *pos) {
  COLIOI_ENTER("colio_stream_seek");
  int64_t p = 0;
  int rc = colioGoStreamSeek((uintptr_t)stream, offset, whence, &p);
  if (rc == COLIO_OK && pos)
    *pos = p;
  return rc;
}

int colio_stream_tell(colio_stream *stream, int64_t *pos) {
  COLIOI_ENTER("colio_stream_tell");
  COLIOI_NEED("colio_stream_tell", pos);
  return colioGoStreamTell((uintptr_t)stream, pos);
}

int colio_stream_free(colio_stream *stream) {
  COLIOI_ENTER("colio_stream_free");
  if (!stream)
    return COLIO_OK;
  return colioGoStreamFree((uintptr_t)stream);
}
