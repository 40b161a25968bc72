/*
 * pyfast.c: the small calls of the Python package as builtin functions
 * (issue 15.3), in libcolio.so itself.
 *
 * A 4 KiB read from the page cache costs about 0.6 us in the kernel. From
 * Python through ctypes the same colio_read costs 1.4 us more: ctypes
 * converts every argument into a C object and back, and the address of
 * the destination takes another call. os.preadv, a builtin, takes the
 * buffer through the buffer protocol and adds about 0.2 us. So the calls
 * where Python's overhead is most of the time (read_into, read and write
 * of small buffers, read_ranges of many small ranges) are offered here as
 * METH_FASTCALL functions that take the Python objects as they are. The
 * Python package imports this file's PyInit__native from the library it
 * loaded with ctypes (the same handle: dlopen finds it loaded), and keeps
 * its ctypes paths for everything else and for any Python where this
 * module does not load.
 *
 * No Python header is needed to build libcolio.so, and C programs that
 * never load Python link and run as before: the few functions used are
 * declared here from the stable ABI (their layouts and signatures are
 * fixed across CPython 3 releases with the GIL) as weak symbols, which
 * resolve to the interpreter's when libcolio.so is loaded into Python and
 * stay NULL otherwise; PyInit__native refuses to start if one is missing.
 * The free-threaded build has another object layout: the package does not
 * import this module there.
 *
 * Every function releases the GIL around the library call, as ctypes and
 * os.preadv do, and either serves the call, returns the library's
 * (negative) code, or returns None where the caller's ctypes path must
 * decide (an object without a contiguous buffer, a size over the inline
 * limit): no error text is made here, so messages stay the library's.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#include "colioi.h"

/* ---- the stable ABI subset ------------------------------------------ */

typedef ssize_t Py_ssize_t;
typedef struct _typeobject PyTypeObject;
typedef struct _object {
  Py_ssize_t ob_refcnt;
  PyTypeObject *ob_type;
} PyObject;
typedef struct {
  void *buf;
  PyObject *obj;
  Py_ssize_t len;
  Py_ssize_t itemsize;
  int readonly;
  int ndim;
  char *format;
  Py_ssize_t *shape;
  Py_ssize_t *strides;
  Py_ssize_t *suboffsets;
  void *internal;
} Py_buffer;
typedef struct _ts PyThreadState;
typedef PyObject *(*PyFastFn)(PyObject *, PyObject *const *, Py_ssize_t);
typedef struct {
  const char *ml_name;
  void *ml_meth;
  int ml_flags;
  const char *ml_doc;
} PyMethodDef;
typedef struct {
  PyObject ob_base;
  PyObject *(*m_init)(void);
  Py_ssize_t m_index;
  PyObject *m_copy;
} PyModuleDef_Base;
typedef struct {
  PyModuleDef_Base m_base;
  const char *m_name;
  const char *m_doc;
  Py_ssize_t m_size;
  PyMethodDef *m_methods;
  void *m_slots;
  void *m_traverse;
  void *m_clear;
  void *m_free;
} PyModuleDef;

#define PyBUF_WRITABLE 0x0001
#define PyBUF_ND 0x0008
#define PyBUF_STRIDES (0x0010 | PyBUF_ND)
#define PyBUF_C_CONTIGUOUS (0x0020 | PyBUF_STRIDES)
#define METH_FASTCALL 0x0080
#define PYTHON_ABI_VERSION 3

#define WEAK __attribute__((weak))
extern PyObject *PyModule_Create2(PyModuleDef *, int) WEAK;
extern int PyObject_GetBuffer(PyObject *, Py_buffer *, int) WEAK;
extern void PyBuffer_Release(Py_buffer *) WEAK;
extern long long PyLong_AsLongLong(PyObject *) WEAK;
extern PyObject *PyLong_FromLongLong(long long) WEAK;
extern PyObject *PyErr_Occurred(void) WEAK;
extern void PyErr_Clear(void) WEAK;
extern PyThreadState *PyEval_SaveThread(void) WEAK;
extern void PyEval_RestoreThread(PyThreadState *) WEAK;
extern PyObject *PyTuple_New(Py_ssize_t) WEAK;
extern int PyTuple_SetItem(PyObject *, Py_ssize_t, PyObject *) WEAK;
extern PyObject *PyTuple_GetItem(PyObject *, Py_ssize_t) WEAK;
extern Py_ssize_t PyTuple_Size(PyObject *) WEAK;
extern PyObject *PyList_New(Py_ssize_t) WEAK;
extern int PyList_SetItem(PyObject *, Py_ssize_t, PyObject *) WEAK;
extern PyObject *PyList_GetItem(PyObject *, Py_ssize_t) WEAK;
extern Py_ssize_t PyList_Size(PyObject *) WEAK;
extern PyObject *PyBytes_FromStringAndSize(const char *, Py_ssize_t) WEAK;
extern char *PyBytes_AsString(PyObject *) WEAK;
extern PyObject *PyMemoryView_FromObject(PyObject *) WEAK;
extern PyObject *PySequence_GetSlice(PyObject *, Py_ssize_t, Py_ssize_t) WEAK;
extern void *PyMem_Malloc(size_t) WEAK;
extern void PyMem_Free(void *) WEAK;
extern void Py_DecRef(PyObject *) WEAK;
extern void Py_IncRef(PyObject *) WEAK;
extern PyObject *PyErr_NoMemory(void) WEAK;
extern PyTypeObject PyTuple_Type WEAK;
extern PyTypeObject PyList_Type WEAK;
extern PyTypeObject PyLong_Type WEAK;
extern PyObject _Py_NoneStruct WEAK;

static PyObject *none(void) {
  Py_IncRef(&_Py_NoneStruct);
  return &_Py_NoneStruct;
}

/* An int argument as int64 (exact ints only: anything else, a bool or a
 * numpy integer among them, goes to the ctypes path, which converts it). */
static int arg_i64(PyObject *o, int64_t *v) {
  if (o->ob_type != &PyLong_Type)
    return 0;
  long long x = PyLong_AsLongLong(o);
  if (x == -1 && PyErr_Occurred()) {
    PyErr_Clear(); /* too large: the ctypes path says so */
    return 0;
  }
  *v = x;
  return 1;
}

/* read_into(handle, buf, offset, limit) -> nread, a negative code, or
 * None (not served: no contiguous writable buffer, empty, or over limit). */
static PyObject *py_read_into(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
  int64_t h, off, limit;
  if (nargs != 4 || !arg_i64(args[0], &h) || !arg_i64(args[2], &off) ||
      !arg_i64(args[3], &limit) || off < 0)
    return none();
  Py_buffer view;
  if (PyObject_GetBuffer(args[1], &view, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) != 0) {
    PyErr_Clear(); /* the ctypes path names what is wrong with it */
    return none();
  }
  if (view.len <= 0 || view.len > limit) {
    PyBuffer_Release(&view);
    return none();
  }
  int64_t got = 0;
  PyThreadState *ts = PyEval_SaveThread();
  int rc = colio_read((colio_source *)(uintptr_t)h, view.buf, view.len, off, &got);
  PyEval_RestoreThread(ts);
  PyBuffer_Release(&view);
  return PyLong_FromLongLong(rc ? rc : got);
}

/* read(handle, offset, size) -> bytes (shorter at the end), a negative
 * code, or None. The caller checks size against the inline limit. */
static PyObject *py_read(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
  int64_t h, off, n;
  if (nargs != 3 || !arg_i64(args[0], &h) || !arg_i64(args[1], &off) || !arg_i64(args[2], &n) ||
      n <= 0 || off < 0)
    return none();
  PyObject *b = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)n);
  if (!b)
    return NULL;
  char *p = PyBytes_AsString(b);
  int64_t got = 0;
  PyThreadState *ts = PyEval_SaveThread();
  int rc = colio_read((colio_source *)(uintptr_t)h, p, n, off, &got);
  PyEval_RestoreThread(ts);
  if (rc) {
    Py_DecRef(b);
    return PyLong_FromLongLong(rc);
  }
  if (got == n)
    return b;
  PyObject *cut = PySequence_GetSlice(b, 0, (Py_ssize_t)got); /* the end of the source */
  Py_DecRef(b);
  return cut;
}

/* write(handle, buf, offset, limit) -> (nwritten or a negative code,
 * where the bytes went), or None. offset may be COLIO_APPEND. */
static PyObject *py_write(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
  int64_t h, off, limit;
  if (nargs != 4 || !arg_i64(args[0], &h) || !arg_i64(args[2], &off) || !arg_i64(args[3], &limit))
    return none();
  Py_buffer view;
  if (PyObject_GetBuffer(args[1], &view, PyBUF_C_CONTIGUOUS) != 0) {
    PyErr_Clear();
    return none();
  }
  if (view.len <= 0 || view.len > limit) {
    PyBuffer_Release(&view);
    return none();
  }
  int64_t put = 0, at = 0;
  PyThreadState *ts = PyEval_SaveThread();
  int rc = colio_write_ex((colio_sink *)(uintptr_t)h, view.buf, view.len, off, &put, &at);
  PyEval_RestoreThread(ts);
  PyBuffer_Release(&view);
  PyObject *t = PyTuple_New(2);
  if (!t)
    return NULL;
  PyTuple_SetItem(t, 0, PyLong_FromLongLong(rc ? rc : put));
  PyTuple_SetItem(t, 1, PyLong_FromLongLong(at));
  return t;
}

/* read_ranges(handle, flags, ranges, max_size, max_total) -> a list of
 * memoryviews over one bytes object (each shorter at the end of the
 * source), a negative code, or None: ranges must be a list of (int, int)
 * tuples with sizes from 0 to max_size and at most max_total bytes in all;
 * anything else is the ctypes path's to check and name. One blocking
 * colio_readv_packed call reads them, the GIL released. */
static PyObject *py_read_ranges(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
  int64_t h, flags, max_size, max_total;
  if (nargs != 5 || !arg_i64(args[0], &h) || !arg_i64(args[1], &flags) ||
      args[2]->ob_type != &PyList_Type || !arg_i64(args[3], &max_size) ||
      !arg_i64(args[4], &max_total))
    return none();
  PyObject *list = args[2];
  Py_ssize_t n = PyList_Size(list);
  if (n <= 0)
    return none();
  /* pairs, then nread, then status, in one allocation */
  size_t bytes = (size_t)n * (2 * sizeof(int64_t) + sizeof(int64_t) + sizeof(int));
  int64_t *pairs = PyMem_Malloc(bytes);
  if (!pairs)
    return PyErr_NoMemory();
  int64_t *nread = pairs + 2 * n;
  int *status = (int *)(nread + n);
  int64_t total = 0;
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *it = PyList_GetItem(list, i);
    int64_t o, s;
    if (it->ob_type != &PyTuple_Type || PyTuple_Size(it) != 2 ||
        !arg_i64(PyTuple_GetItem(it, 0), &o) || !arg_i64(PyTuple_GetItem(it, 1), &s) || o < 0 ||
        s < 0 || s > max_size || s > max_total - total) {
      PyMem_Free(pairs);
      return none();
    }
    pairs[2 * i] = o;
    pairs[2 * i + 1] = s;
    total += s;
  }
  PyObject *b = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)total);
  if (!b) {
    PyMem_Free(pairs);
    return NULL;
  }
  char *base = PyBytes_AsString(b);
  PyThreadState *ts = PyEval_SaveThread();
  int rc = colio_readv_packed((colio_source *)(uintptr_t)h, pairs, n, (uint32_t)flags, base, total,
                              nread, status, NULL, 0, NULL);
  PyEval_RestoreThread(ts);
  PyObject *out = NULL, *mv = NULL;
  if (rc) {
    out = PyLong_FromLongLong(rc);
    goto done;
  }
  mv = PyMemoryView_FromObject(b);
  if (!mv)
    goto done;
  out = PyList_New(n);
  if (!out)
    goto done;
  Py_ssize_t pos = 0;
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *s = PySequence_GetSlice(mv, pos, pos + (Py_ssize_t)nread[i]);
    if (!s) {
      Py_DecRef(out);
      out = NULL;
      goto done;
    }
    PyList_SetItem(out, i, s); /* steals s */
    pos += (Py_ssize_t)pairs[2 * i + 1];
  }
done:
  if (mv)
    Py_DecRef(mv);
  Py_DecRef(b);
  PyMem_Free(pairs);
  return out;
}

static PyMethodDef methods[] = {
    {"read_into", (void *)py_read_into, METH_FASTCALL, NULL},
    {"read", (void *)py_read, METH_FASTCALL, NULL},
    {"write", (void *)py_write, METH_FASTCALL, NULL},
    {"read_ranges", (void *)py_read_ranges, METH_FASTCALL, NULL},
    {NULL, NULL, 0, NULL},
};

static PyModuleDef module = {
    {{1, NULL}, NULL, 0, NULL}, "colio._native", NULL, -1, methods, NULL, NULL, NULL, NULL,
};

/* Every weak symbol above, so that one missing (an interpreter that does
 * not export it) stops the import instead of a call. */
static int python_present(void) {
  void *need[] = {
      (void *)PyModule_Create2,        (void *)PyObject_GetBuffer,  (void *)PyBuffer_Release,
      (void *)PyLong_AsLongLong,       (void *)PyLong_FromLongLong, (void *)PyErr_Occurred,
      (void *)PyErr_Clear,             (void *)PyEval_SaveThread,   (void *)PyEval_RestoreThread,
      (void *)PyTuple_New,             (void *)PyTuple_SetItem,     (void *)PyTuple_GetItem,
      (void *)PyTuple_Size,            (void *)PyList_New,          (void *)PyList_SetItem,
      (void *)PyList_GetItem,          (void *)PyList_Size,         (void *)PyBytes_FromStringAndSize,
      (void *)PyBytes_AsString,        (void *)PyMemoryView_FromObject,
      (void *)PySequence_GetSlice,     (void *)PyMem_Malloc,        (void *)PyMem_Free,
      (void *)Py_DecRef,               (void *)Py_IncRef,           (void *)PyErr_NoMemory,
      (void *)&PyTuple_Type,           (void *)&PyList_Type,        (void *)&PyLong_Type,
      (void *)&_Py_NoneStruct,
  };
  for (size_t i = 0; i < sizeof need / sizeof need[0]; i++)
    if (!need[i])
      return 0;
  return 1;
}

PyObject *PyInit__native(void) {
  if (!python_present())
    return NULL; /* not inside a CPython that exports the stable ABI */
  return PyModule_Create2(&module, PYTHON_ABI_VERSION);
}
