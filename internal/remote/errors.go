package remote

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/colio-dev/colio/internal/errs"
)

// Why an attempt's context ended, when colio ended it (context.Cause).
var (
	errIdle           = errors.New("idle timeout")
	errRequestTimeout = errors.New("request timeout")
	errClosed         = errors.New("source closed")
	errNoLength       = errors.New("HEAD answered without a Content-Length")
)

func errorsAs(err error, target any) bool { return errors.As(err, target) }

// httpError is a failed response: its status and, for S3, its XML code.
type httpError struct {
	Status  int
	Code    string // S3 error code, "" if none
	Message string // S3 error message

	retryAfter time.Duration // from a Retry-After of whole seconds, 0 if none
}

func (e *httpError) Error() string {
	s := fmt.Sprintf("HTTP %d %s", e.Status, http.StatusText(e.Status))
	if e.Code != "" {
		s += fmt.Sprintf(" (%s: %s)", e.Code, e.Message)
	}
	return s
}

// readHTTPError reads an S3-style XML error from a failed response's body
// (the first 64 KiB; a body that is not one leaves Code empty).
func readHTTPError(resp *http.Response) *httpError {
	he := &httpError{Status: resp.StatusCode}
	if n, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && n > 0 {
		he.retryAfter = time.Duration(n) * time.Second
	}
	if resp.Body != nil {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		var x struct {
			Code    string `xml:"Code"`
			Message string `xml:"Message"`
		}
		if xml.Unmarshal(b, &x) == nil {
			he.Code, he.Message = x.Code, clip(x.Message, 300)
		}
	}
	return he
}

// retryable says whether another attempt may succeed: connection errors
// and timeouts, 429 and 5xx (but not 501), and S3's throttling codes.
// Refused connections and DNS failures are not: they fail fast.
func retryable(err error) bool {
	var he *httpError
	if errors.As(err, &he) {
		switch he.Status {
		case 429, 500, 502, 503, 504:
			return true
		}
		return he.Code == "SlowDown" || he.Code == "RequestTimeout" || he.Code == "InternalError"
	}
	if errors.Is(err, errClosed) || errors.Is(err, context.Canceled) && !errors.Is(err, errIdle) {
		return false
	}
	var ce *changedError
	if errors.As(err, &ce) {
		return false
	}
	var pe *protocolError
	if errors.As(err, &pe) {
		return false
	}
	var dns *net.DNSError
	if errors.As(err, &dns) && !dns.IsTimeout {
		return false
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return false
	}
	return true // resets, EOFs, timeouts
}

// changedError is an object that is not the one opened: a new ETag or
// Last-Modified, a 412 to If-Match, another size.
type changedError struct{ why string }

func (e *changedError) Error() string { return "the object changed since open: " + e.why }

// protocolError is a response that breaks the range contract: a 200 to a
// ranged GET, a wrong Content-Range, a body of the wrong length.
type protocolError struct{ why string }

func (e *protocolError) Error() string { return e.why }

// classify turns an attempt's error into colio's error for a request
// described by what ("GET URL bytes=a-b"), with the kind and errno a C or
// Python caller can act on.
func classify(what string, attempts int, err error) error {
	tries := ""
	if attempts > 1 {
		tries = fmt.Sprintf(" (after %d attempts)", attempts)
	}
	mk := func(k errs.Kind, errno syscall.Errno, msg string) error {
		return &errs.Error{Kind: k, Errno: errno, Msg: fmt.Sprintf("colio: %s: %s%s", what, msg, tries)}
	}
	// url.Error repeats the URL, query signature included: drop it.
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var he *httpError
	var ce *changedError
	var pe *protocolError
	var dns *net.DNSError
	switch {
	case errors.Is(err, errClosed):
		return mk(errs.Closed, 0, "the source was closed during the request")
	case errors.As(err, &he):
		switch {
		case he.Status == 404 || he.Code == "NoSuchKey" || he.Code == "NoSuchBucket":
			return mk(errs.NotFound, syscall.ENOENT, he.Error())
		case he.Status == 401 || he.Status == 403 || he.Code == "ExpiredToken" || he.Code == "InvalidToken" ||
			he.Code == "SignatureDoesNotMatch" || he.Code == "InvalidAccessKeyId" || he.Code == "AccessDenied":
			return mk(errs.IO, syscall.EACCES, he.Error())
		case he.Status == 412:
			return mk(errs.IO, syscall.ESTALE, "the object changed since open (412 Precondition Failed to If-Match)")
		}
		return mk(errs.IO, syscall.EIO, he.Error())
	case errors.As(err, &ce):
		return mk(errs.IO, syscall.ESTALE, ce.Error())
	case errors.As(err, &pe):
		return mk(errs.IO, syscall.EPROTO, pe.Error())
	case errors.Is(err, errIdle):
		return mk(errs.Timeout, syscall.ETIMEDOUT, "no body bytes within idle_timeout")
	case errors.Is(err, errRequestTimeout):
		return mk(errs.Timeout, syscall.ETIMEDOUT, "not done within request_timeout")
	case errors.Is(err, context.Canceled):
		return mk(errs.Cancelled, 0, "cancelled")
	case errors.As(err, &dns):
		return mk(errs.IO, syscall.EHOSTUNREACH, "cannot resolve host "+dns.Name)
	case errors.Is(err, syscall.ECONNREFUSED):
		return mk(errs.IO, syscall.ECONNREFUSED, "connection refused")
	case isTimeout(err) && strings.Contains(err.Error(), "awaiting response headers"):
		return mk(errs.Timeout, syscall.ETIMEDOUT, "no response within first_byte_timeout")
	case isTimeout(err):
		return mk(errs.Timeout, syscall.ETIMEDOUT, "timed out: "+err.Error())
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return mk(errs.IO, syscall.ECONNRESET, "the connection closed before the whole body arrived")
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return mk(errs.IO, errno, err.Error())
	}
	return mk(errs.IO, syscall.EIO, err.Error())
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() || errors.Is(err, context.DeadlineExceeded)
}
