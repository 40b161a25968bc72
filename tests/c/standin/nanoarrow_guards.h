/*
 * A stand-in for the way nanoarrow (nanoarrow/nanoarrow_types.h) guards its
 * copy of the Arrow C ABI, for test_header_order.sh: nanoarrow's headers
 * ship in none of the packages this machine can install (the nanoarrow
 * wheel has no headers), so this file reproduces the guard logic it uses,
 * written from its documented behaviour, not copied:
 *
 *   - an outer guard on ARROW_FLAG_DICTIONARY_ORDERED ("versions of Arrow
 *     without the canonical guard"): if that macro is defined, nanoarrow
 *     assumes that BOTH the C data interface and the C stream interface
 *     are already declared, and declares neither;
 *   - inside it, the canonical ARROW_C_DATA_INTERFACE and
 *     ARROW_C_STREAM_INTERFACE guards;
 *   - then code that uses every member of struct ArrowArrayStream, as
 *     nanoarrow's inline helpers do (that is where the "incomplete type"
 *     errors came from when colio.h was included first).
 */
#ifndef COLIO_TEST_NANOARROW_GUARDS_H
#define COLIO_TEST_NANOARROW_GUARDS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef ARROW_FLAG_DICTIONARY_ORDERED

#ifndef ARROW_C_DATA_INTERFACE
#define ARROW_C_DATA_INTERFACE
#define ARROW_FLAG_DICTIONARY_ORDERED 1
#define ARROW_FLAG_NULLABLE 2
#define ARROW_FLAG_MAP_KEYS_SORTED 4
struct ArrowSchema {
  const char *format;
  const char *name;
  const char *metadata;
  int64_t flags;
  int64_t n_children;
  struct ArrowSchema **children;
  struct ArrowSchema *dictionary;
  void (*release)(struct ArrowSchema *);
  void *private_data;
};
struct ArrowArray {
  int64_t length;
  int64_t null_count;
  int64_t offset;
  int64_t n_buffers;
  int64_t n_children;
  const void **buffers;
  struct ArrowArray **children;
  struct ArrowArray *dictionary;
  void (*release)(struct ArrowArray *);
  void *private_data;
};
#endif /* ARROW_C_DATA_INTERFACE */

#ifndef ARROW_C_STREAM_INTERFACE
#define ARROW_C_STREAM_INTERFACE
struct ArrowArrayStream {
  int (*get_schema)(struct ArrowArrayStream *, struct ArrowSchema *out);
  int (*get_next)(struct ArrowArrayStream *, struct ArrowArray *out);
  const char *(*get_last_error)(struct ArrowArrayStream *);
  void (*release)(struct ArrowArrayStream *);
  void *private_data;
};
#endif /* ARROW_C_STREAM_INTERFACE */

#endif /* ARROW_FLAG_DICTIONARY_ORDERED */

/* Uses of the complete types, like nanoarrow's inline functions. */
static inline int standin_stream_next(struct ArrowArrayStream *s, struct ArrowArray *out) {
  if (s->release == NULL || s->get_next == NULL)
    return -1;
  return s->get_next(s, out);
}
static inline const char *standin_stream_error(struct ArrowArrayStream *s) {
  return s->get_last_error ? s->get_last_error(s) : (const char *)s->private_data;
}
static inline int64_t standin_array_length(const struct ArrowArray *a, const struct ArrowSchema *sc) {
  return (sc->flags & ARROW_FLAG_NULLABLE) ? a->length - a->null_count : a->length;
}

#ifdef __cplusplus
}
#endif

#endif /* COLIO_TEST_NANOARROW_GUARDS_H */
