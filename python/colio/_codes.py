"""colio's C status codes (``COLIO_OK`` and ``COLIO_E*`` of colio.h).

A leaf module: colio._errors maps these codes to exceptions and colio._lib
loads the library that returns them, and neither needs the other for the
numbers (tests/python/test_header.py checks them against the header).
"""

OK = 0
EINVAL = -1
EIO = -2
ENOTFOUND = -3
ECLOSED = -4
ETIMEDOUT = -5
ECANCELLED = -6
ENOTSUP = -7
ECALLBACK = -8
ENOSPC = -9
EFORK = -10
EINTERNAL = -11
