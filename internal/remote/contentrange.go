package remote

import (
	"fmt"
	"strconv"
	"strings"
)

// contentRange is a parsed Content-Range: bytes [First, Last] of an object
// of Total bytes (Total -1 when the server says "*"; First -1 for the
// unsatisfied form "bytes */Total").
type contentRange struct {
	First, Last, Total int64
}

// parseContentRange reads a Content-Range header value (RFC 9110 14.4).
// Anything malformed is an error: a reader that guessed would hand out
// bytes of the wrong offsets.
func parseContentRange(v string) (contentRange, error) {
	bad := func(why string) (contentRange, error) {
		return contentRange{}, fmt.Errorf("malformed Content-Range %q: %s", clip(v, 80), why)
	}
	spec, ok := strings.CutPrefix(v, "bytes ")
	if !ok {
		return bad("not in bytes")
	}
	rng, total, ok := strings.Cut(spec, "/")
	if !ok {
		return bad("no /length")
	}
	cr := contentRange{Total: -1}
	if total != "*" {
		n, err := digits(total)
		if err != nil {
			return bad("bad length")
		}
		cr.Total = n
	}
	if rng == "*" {
		if cr.Total < 0 {
			return bad("*/* says nothing")
		}
		cr.First, cr.Last = -1, -1
		return cr, nil
	}
	a, b, ok := strings.Cut(rng, "-")
	if !ok {
		return bad("no first-last")
	}
	first, err1 := digits(a)
	last, err2 := digits(b)
	if err1 != nil || err2 != nil {
		return bad("bad first-last")
	}
	if last < first {
		return bad("last before first")
	}
	if cr.Total >= 0 && last >= cr.Total {
		return bad("past the length")
	}
	cr.First, cr.Last = first, last
	return cr, nil
}

// digits parses a non-negative decimal without sign or spaces, which
// strconv alone would accept ("+5").
func digits(s string) (int64, error) {
	if s == "" || len(s) > 19 {
		return 0, fmt.Errorf("bad number")
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("bad number")
		}
	}
	return strconv.ParseInt(s, 10, 64)
}

// rangeHeader is the Range header for bytes [off, off+n).
func rangeHeader(off, n int64) string {
	return "bytes=" + strconv.FormatInt(off, 10) + "-" + strconv.FormatInt(off+n-1, 10)
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
