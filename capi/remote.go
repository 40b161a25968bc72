package main

/*
#include <stdlib.h>
#include "colioi.h"
*/
import "C"

import (
	"context"
	"os"
	"unsafe"

	"github.com/colio-dev/colio/internal/remote"
)

// maxURLOptions bounds the options array, so that a list missing its NULL
// terminator fails instead of reading on through memory.
const maxURLOptions = 4096

//export colioGoSourceOpenURL
func colioGoSourceOpenURL(url *C.char, options **C.char, out *C.uintptr_t) (rc C.int) {
	const name = "colio_source_open_url"
	defer recoverInto(name, &rc)
	if url == nil {
		return invalid(name, "url is NULL")
	}
	if _, err := eng(); err != nil {
		return fail(name, err)
	}
	o, rc := urlOptions(name, options)
	if rc != C.COLIO_OK {
		return rc
	}
	syncAWSEnv()
	s, err := remote.Open(context.Background(), C.GoString(url), o)
	if err != nil {
		return fail(name, err)
	}
	return putSource(name, s, out)
}

// urlOptions parses a NULL-terminated "key=value" array (NULL: none), as
// colio_source_open_url and colio_fetch_urls take it.
func urlOptions(name string, options **C.char) (remote.Options, C.int) {
	var kvs []string
	if options != nil {
		list := unsafe.Slice(options, maxURLOptions+1)
		for i := 0; ; i++ {
			if i == maxURLOptions {
				return remote.Options{}, invalid(name, "options has more than %d entries (is it NULL-terminated?)", maxURLOptions)
			}
			if list[i] == nil {
				break
			}
			kvs = append(kvs, C.GoString(list[i]))
		}
	}
	o, err := remote.ParseOptions(kvs, cGetenv)
	if err != nil {
		return remote.Options{}, fail(name, err)
	}
	return o, C.COLIO_OK
}

// cGetenv asks the C library, which sees a setenv made after colio was
// loaded (Go's own copy of the environment does not: env.go).
func cGetenv(key string) (string, bool) {
	ck := C.CString(key)
	defer C.free(unsafe.Pointer(ck))
	v := C.getenv(ck)
	if v == nil {
		return "", false
	}
	return C.GoString(v), true
}

// awsEnv are the variables the SDK's configuration and Go's proxy and
// root loading read with os.Getenv.
var awsEnv = []string{
	"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_PROFILE",
	"AWS_REGION", "AWS_DEFAULT_REGION", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE",
	"AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN", "AWS_ROLE_SESSION_NAME", "AWS_EC2_METADATA_DISABLED",
	"AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
	"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_AUTHORIZATION_TOKEN",
	"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy",
}

// syncAWSEnv brings Go's environment up to the C library's for awsEnv
// before an open, so that credentials a Python program put in os.environ
// after loading colio are found. It writes only what differs, since a
// setenv races with other threads' getenv.
func syncAWSEnv() {
	for _, k := range awsEnv {
		cv, cok := cGetenv(k)
		gv, gok := os.LookupEnv(k)
		switch {
		case cok && (!gok || gv != cv):
			os.Setenv(k, cv)
		case !cok && gok:
			os.Unsetenv(k)
		}
	}
}

// colioGoSourceETag copies the ETag of a URL source's object (remote.Source.ETag)
// into buf as a NUL-terminated string, and whether it is stable
// (remote.Source.StableETag); other sources have none ("", not stable).
//
//export colioGoSourceETag
func colioGoSourceETag(src C.uintptr_t, buf *C.char, size C.size_t, n *C.size_t, stable *C.int) (rc C.int) {
	const name = "colio_source_etag"
	defer recoverInto(name, &rc)
	_, s, rc := sourceOf(name, src)
	if rc != C.COLIO_OK {
		return rc
	}
	etag, firm := "", false
	if r, ok := s.Underlying().(interface {
		ETag() string
		StableETag() bool
	}); ok {
		etag, firm = r.ETag(), r.StableETag()
	}
	if n != nil {
		*n = C.size_t(len(etag))
	}
	if stable != nil {
		*stable = 0
		if firm {
			*stable = 1
		}
	}
	if buf == nil && size == 0 { // a query of the length
		return C.COLIO_OK
	}
	if buf == nil || uint64(size) <= uint64(len(etag)) {
		return invalid(name, "the ETag needs %d bytes with its NUL, the buffer has %d", len(etag)+1, uint64(size))
	}
	out := unsafe.Slice((*byte)(unsafe.Pointer(buf)), len(etag)+1)
	copy(out, etag)
	out[len(etag)] = 0
	return C.COLIO_OK
}
