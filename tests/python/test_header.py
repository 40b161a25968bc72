"""The ctypes declarations in colio/_lib.py match include/colio.h."""

from __future__ import annotations

import ctypes
import os
import re

from conftest import ROOT

from colio import _lib

HEADER = os.path.join(ROOT, "include", "colio.h")


def _strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def _header():
    return _strip_comments(open(HEADER).read())


HANDLE_TYPES = {"colio_source", "colio_sink", "colio_future", "colio_stream", "colio_cq"}
STRUCT_NAMES = set(_lib.STRUCTS)


def ctype_of(decl: str):
    """The ctypes type a C parameter or return type maps to."""
    t = re.sub(r"\bconst\b", " ", decl)
    t = re.sub(r"\bstruct\b", " ", t)
    stars = t.count("*")
    base = t.replace("*", " ").split()[0]
    if base in HANDLE_TYPES:
        assert stars >= 1, decl
        ty = _lib.handle_p
        stars -= 1
    elif base in STRUCT_NAMES:
        ty = _lib.STRUCTS[base]
    elif base in _lib.CALLBACK_TYPES:
        ty = _lib.CALLBACK_TYPES[base]
    elif base == "char" and stars >= 1:
        ty = ctypes.c_char_p
        stars -= 1
    elif base == "void" and stars >= 1:
        ty = ctypes.c_void_p
        stars -= 1
    else:
        ty = {"void": None, "int": ctypes.c_int, "int64_t": ctypes.c_int64,
              "uint32_t": ctypes.c_uint32, "uint64_t": ctypes.c_uint64, "size_t": ctypes.c_size_t,
              "uintptr_t": ctypes.c_size_t}[base]
    for _ in range(stars):
        ty = ctypes.POINTER(ty)
    return ty


def _param_type(param: str):
    param = param.strip()
    # drop the parameter name (the last identifier, when there is a type before it)
    m = re.match(r"^(.*?[\s\*])([A-Za-z_]\w*)$", param)
    if m and m.group(1).strip():
        param = m.group(1)
    return ctype_of(param)


def header_functions():
    text = _header()
    out = {}
    for m in re.finditer(r"(?:^|[;}\n])\s*([A-Za-z_][\w\s\*]*?[\s\*])(colio_\w+)\s*\(([^;{]*?)\)\s*;",
                         text):
        ret, name, params = m.group(1), m.group(2), m.group(3)
        if "typedef" in ret:
            continue
        params = " ".join(params.split())
        args = [] if params in ("", "void") else [_param_type(p) for p in params.split(",")]
        out[name] = (ctype_of(ret), args)
    return out


def test_parser_finds_the_whole_header():
    fns = header_functions()
    # Every "colio_xxx(" that is a prototype must be parsed.
    protos = set(re.findall(r"\b(colio_\w+)\s*\(", _header())) - {"colio_future_callback"}
    assert protos == set(fns), protos ^ set(fns)
    assert len(fns) >= 30


def test_every_function_declared_with_matching_types():
    fns = header_functions()
    assert set(fns) == set(_lib.FUNCTIONS), (
        f"missing in _lib: {sorted(set(fns) - set(_lib.FUNCTIONS))}, "
        f"not in header: {sorted(set(_lib.FUNCTIONS) - set(fns))}")
    for name, (ret, args) in fns.items():
        lret, largs = _lib.FUNCTIONS[name]
        assert lret == ret, f"{name}: restype {lret} != header {ret}"
        assert list(largs) == args, f"{name}: argtypes {largs} != header {args}"


def test_loaded_functions_carry_the_declarations():
    L = _lib.load()
    for name, (ret, args) in _lib.FUNCTIONS.items():
        fn = getattr(L, name)
        assert fn.restype == ret and list(fn.argtypes) == list(args), name


def _struct_fields(name):
    text = _header()
    # "typedef struct x {...} x;" or, for the Arrow structs, "struct x {...};"
    m = re.search(r"(?:typedef\s+)?struct\s+" + name + r"\s*\{(.*?)\}\s*(?:" + name + r"\s*)?;",
                  text, re.S)
    assert m, name
    fields = []
    for decl in m.group(1).split(";"):
        decl = " ".join(decl.split())
        if not decl:
            continue
        fp = re.match(r"(.+?)\(\s*\*\s*(\w+)\s*\)\s*\((.*)\)$", decl)
        if fp:
            ret, fname, params = fp.groups()
            args = [] if params.strip() in ("", "void") else [_param_type(p) for p in params.split(",")]
            fields.append((fname, ("fn", ctype_of(ret), args)))
        else:
            t, fname = decl.rsplit(" ", 1)
            while fname.startswith("*"):
                t, fname = t + "*", fname[1:]
            fields.append((fname, ctype_of(t)))
    return fields


def test_struct_layouts_match_the_header():
    for name, cls in _lib.STRUCTS.items():
        hdr = _struct_fields(name)
        assert [f for f, _ in hdr] == [f for f, _ in cls._fields_], name
        for (fname, htype), (_, ltype) in zip(hdr, cls._fields_):
            if isinstance(htype, tuple):
                _, ret, args = htype
                assert ltype._restype_ == ret, (name, fname)
                assert list(ltype._argtypes_) == args, (name, fname)
            else:
                assert ltype == htype, (name, fname, ltype, htype)


def test_callback_typedef_matches():
    m = re.search(r"typedef\s+void\s*\(\s*\*\s*colio_future_callback\s*\)\s*\((.*?)\)\s*;", _header(), re.S)
    args = [_param_type(p) for p in " ".join(m.group(1).split()).split(",")]
    assert _lib.FUTURE_CALLBACK._restype_ is None
    assert list(_lib.FUTURE_CALLBACK._argtypes_) == args


def test_constants_match_the_header():
    text = _header()
    defs = dict(re.findall(r"#define\s+COLIO_(\w+)\s+\(?\s*(?:\(int64_t\))?\s*(-?\d+)u?\s*\)?", text))
    for name in ("OK", "EINVAL", "EIO", "ENOTFOUND", "ECLOSED", "ETIMEDOUT", "ECANCELLED",
                 "ENOTSUP", "ECALLBACK", "ENOSPC", "EFORK", "EINTERNAL", "WAIT_FOREVER",
                 "APPEND", "SINK_CREATE", "SINK_TRUNCATE", "SINK_APPEND"):
        assert int(defs[name]) == getattr(_lib, name), name
    assert int(defs["CALLBACK_CONCURRENT"]) == _lib.CALLBACK_CONCURRENT
    assert int(defs["CALLBACK_FAST"]) == _lib.CALLBACK_FAST


def test_library_version_matches_header():
    import colio
    text = _header()
    v = ".".join(re.search(r"#define COLIO_VERSION_%s (\d+)" % k, text).group(1)
                 for k in ("MAJOR", "MINOR", "PATCH"))
    assert colio.library_version() == v
    assert colio.__version__ == v
