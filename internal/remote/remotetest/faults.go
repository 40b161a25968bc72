package remotetest

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Faults, chosen by a path prefix: /_fault/MODE[,MODE...]/rest.
//
//	drop[=N]        half the body, then the connection is cut (first N requests; all without N)
//	503[=N] ...     answer that status (any of 429, 500-504) with an S3 XML error, first N requests
//	s3=CODE         an S3 error: NoSuchKey, NoSuchBucket, AccessDenied, SignatureDoesNotMatch,
//	                InvalidAccessKeyId, ExpiredToken, SlowDown, InternalError
//	norange         ignore Range: 200 with the whole body
//	badrange        a Content-Range one byte off the range asked for
//	short           one byte less than the range, with a Content-Length that says so
//	trickle=DUR     one byte per DUR
//	rate=BPS        the body at BPS bytes per second (in 32 KiB pieces): a link of known speed
//	hang[=get|head] accept and never answer (every request, or only GETs or HEADs)
//	etag            a new ETag on every request (If-Match then fails with 412)
//	noifmatch       ignore If-Match (with etag: the response's ETag is the only sign)
//	noetag          send neither ETag nor Last-Modified
//	latency=DUR     this request's latency instead of the server's
//	failpart=N      S3 writes: UploadPart N answers 500 InternalError once per upload
//	rejectpart=N    S3 writes: UploadPart N answers 400 InvalidRequest every time
//
// "First N" counts requests to the exact path, HEAD and GET alike, since
// the last reset (GET /_stats?reset=1).
type faults struct {
	seen int // requests to this path before this one

	drop              bool
	dropLimit         int
	status, statusMax int
	s3Code            string
	ignoreRange       bool
	badRange, short   bool
	trickle           time.Duration
	rate              int64  // bytes per second of the body; 0: as fast as it goes
	hang              string // "", "all", "get", "head"
	etag, noETag      bool
	ignoreIfMatch     bool
	latency           time.Duration // -1: the server's
	failPart          int           // write.go: this part number fails with 500 (the first time)
	rejectPart        int           // write.go: this part number is refused (400) every time
}

func (f faults) any() bool {
	return f.drop || f.status != 0 || f.s3Code != "" || f.ignoreRange || f.badRange || f.short ||
		f.trickle > 0 || f.rate > 0 || f.hang != "" || f.etag || f.noETag || f.ignoreIfMatch
}

// parseFaults splits a request path into its faults and the path served.
func parseFaults(p string) (faults, string, error) {
	f := faults{latency: -1}
	rest, ok := strings.CutPrefix(p, "/_fault/")
	if !ok {
		return f, p, nil
	}
	modes, rest, _ := strings.Cut(rest, "/")
	rest = "/" + rest
	for _, m := range strings.Split(modes, ",") {
		name, val, hasVal := strings.Cut(m, "=")
		count := func() (int, error) {
			if !hasVal {
				return 1 << 30, nil
			}
			return strconv.Atoi(val)
		}
		var err error
		switch name {
		case "drop":
			f.drop = true
			f.dropLimit, err = count()
		case "429", "500", "501", "502", "503", "504":
			f.status, _ = strconv.Atoi(name)
			f.statusMax, err = count()
		case "s3":
			if _, known := s3Codes[val]; !known {
				err = fmt.Errorf("unknown S3 error code %q", val)
			}
			f.s3Code = val
		case "norange":
			f.ignoreRange = true
		case "badrange":
			f.badRange = true
		case "short":
			f.short = true
		case "trickle":
			f.trickle, err = time.ParseDuration(val)
		case "rate":
			f.rate, err = strconv.ParseInt(val, 10, 64)
			if err == nil && f.rate <= 0 {
				err = fmt.Errorf("rate=%s: not a positive number of bytes per second", val)
			}
		case "hang":
			f.hang = "all"
			if hasVal {
				f.hang = val
			}
		case "etag":
			f.etag = true
		case "noifmatch":
			f.ignoreIfMatch = true
		case "noetag":
			f.noETag = true
		case "failpart":
			f.failPart, err = strconv.Atoi(val)
		case "rejectpart":
			f.rejectPart, err = strconv.Atoi(val)
		case "latency":
			f.latency, err = time.ParseDuration(val)
		default:
			err = fmt.Errorf("unknown fault %q", name)
		}
		if err != nil {
			return f, rest, fmt.Errorf("remotetest: fault %q: %v", m, err)
		}
	}
	return f, rest, nil
}

// apply answers r itself when a fault replaces the answer; faults that
// change how the file is served (drop, ranges, trickle, ETags) are left on
// f for serveFile and only switched off here once their count is spent.
func (f *faults) apply(s *Server, w http.ResponseWriter, r *http.Request, p string) bool {
	if f.hang == "all" || strings.EqualFold(f.hang, r.Method) {
		select {
		case <-r.Context().Done():
		case <-s.done:
		}
		return true
	}
	if f.status != 0 && f.seen < f.statusMax {
		code := "InternalError"
		switch f.status {
		case 429, 503:
			code = "SlowDown"
		}
		s3Error(w, r, f.status, code, fmt.Sprintf("injected %d", f.status), p)
		return true
	}
	if f.s3Code != "" {
		s3Error(w, r, s3Codes[f.s3Code], f.s3Code, "injected "+f.s3Code, p)
		return true
	}
	if f.drop && f.seen >= f.dropLimit {
		f.drop = false
	}
	return false
}
