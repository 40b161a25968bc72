package remote

import (
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/colio-dev/colio/internal/errs"
	"github.com/colio-dev/colio/internal/source"
)

// Source reads an HTTP(S) object or an S3 object with ranged GETs. It is
// safe for use from many goroutines; the engine runs its requests on
// goroutines of its own, at most Options.MaxInFlight at once (doc.go).
type Source struct {
	opt    Options
	target *url.URL // what each request asks for
	shown  string   // the URL for messages: no credentials, no signature
	client *http.Client
	sign   func(ctx context.Context, req *http.Request) error // S3; nil for plain HTTP

	size   int64
	pre    []byte // bytes of the object kept from the open (prefetch.go); read-only
	preOff int64  // where they start: 0 for prefetch, the tail's start for prefetch_tail

	mu            sync.Mutex
	etag, lastMod string // the object's validators at open (or at the first answer)
	// young: that answer's Last-Modified was less than a second before its
	// Date. An ETag derived from the modification time in seconds (nginx's
	// is mtime-size) can then stay the same across another write within
	// that second (RFC 9110 8.8.2.2 calls such a validator weak).
	young bool

	root  context.Context // cancelled by Abort: every request derives from it
	abort context.CancelCauseFunc

	meter meter // time to first byte and throughput (measure.go)
}

var _ source.Source = (*Source)(nil)

// Open opens url (http://, https:// or s3://bucket/key) and learns its
// size and validators (a HEAD, or with o.Prefetch a GET that keeps the
// first bytes; no request when o.Size is set). ctx bounds the open.
func Open(ctx context.Context, rawURL string, o Options) (*Source, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	// An expected ETag (a cached footer's object, say) is the validator
	// from the start: with size= no request is made at open, and every
	// GET carries it as If-Match.
	s := &Source{opt: o, size: o.Size, etag: o.ETag}
	s.root, s.abort = context.WithCancelCause(context.Background())
	t, err := transportFor(o)
	if err != nil {
		return nil, err
	}
	s.client = &http.Client{Transport: t}
	scheme, _, _ := strings.Cut(rawURL, "://")
	switch strings.ToLower(scheme) {
	case "http", "https":
		if len(o.s3Set) > 0 {
			return nil, errs.New(errs.Invalid, "colio: remote option %s applies only to s3:// URLs, not to %s",
				o.s3Set[0], redactURL(rawURL))
		}
		u, err := url.Parse(rawURL)
		if err != nil || u.Host == "" {
			return nil, errs.New(errs.Invalid, "colio: %q is not a valid URL", redactURL(rawURL))
		}
		s.target, s.shown = u, redactURL(rawURL)
	case "s3":
		if err := s.openS3(ctx, rawURL); err != nil {
			return nil, err
		}
	default:
		return nil, errs.New(errs.NotSupported, "colio: remote sources read http://, https:// and s3:// URLs, not %q", redactURL(rawURL))
	}
	if o.Prefetch > 0 && o.PrefetchTail > 0 {
		return nil, errs.New(errs.Invalid, "colio: remote options prefetch and prefetch_tail keep "+
			"different ends of %s: pass one of them", s.shown)
	}
	if s.size < 0 {
		open := s.stat
		if o.Prefetch > 0 || o.PrefetchTail > 0 {
			open = s.prefetch
		}
		if err := open(ctx); err != nil {
			return nil, err
		}
		if o.ETag != "" && s.ETag() != o.ETag {
			// The HEAD sends no precondition, and a server may ignore one.
			return nil, classify("HEAD "+s.shown, 1, &changedError{"ETag " + clip(o.ETag, 80) +
				" expected, " + clip(s.ETag(), 80) + " now"})
		}
	}
	return s, nil
}

// ETag is the object's ETag as the server sent it ("W/" included for a
// weak one), from the open or the first answer; "" when it sent none.
// A caller that keeps what it read of the object (a Parquet footer) can
// open it again later with etag= and size=: no request at open, and any
// read of another version fails with ESTALE.
func (s *Source) ETag() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.etag
}

// StableETag reports whether ETag names one version of the object for
// good, so that a cache may key on it: strong, and not given in the
// second the object was last modified (see young).
func (s *Source) StableETag() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.etag != "" && !strings.HasPrefix(s.etag, "W/") && !s.young
}

// youngAt reports whether an answer's Last-Modified is less than a second
// before its Date (before now when it has no Date); false without a
// Last-Modified.
func youngAt(h http.Header) bool {
	lm, err := http.ParseTime(h.Get("Last-Modified"))
	if err != nil {
		return false
	}
	ref, err := http.ParseTime(h.Get("Date"))
	if err != nil {
		ref = time.Now()
	}
	return ref.Sub(lm) < time.Second
}

// URL is the source's URL as messages show it.
func (s *Source) URL() string { return s.shown }

func (s *Source) Size() (int64, error) { return s.size, nil }

func (s *Source) Traits() source.Traits {
	if s.whole() { // every read is a copy from memory
		return source.Traits{Fast: true, Concurrent: true}
	}
	return source.Traits{Concurrent: true, InFlight: s.opt.MaxInFlight, PartSize: s.opt.RequestSize}
}

// Abort fails every request in flight and every later one with a Closed
// error; the engine calls it when the source is closed, so that closing
// does not wait out a slow server's timeouts.
func (s *Source) Abort() { s.abort(errClosed) }

func (s *Source) Close() error {
	s.Abort()
	return nil
}

// ReadAt reads [off, off+len(p)) with one ranged GET, retried as the
// options say. A retry after a body cut short asks only for the bytes
// still missing, so what arrived is kept.
func (s *Source) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	if off >= s.size || len(p) == 0 {
		return 0, nil
	}
	p = p[:min(int64(len(p)), s.size-off)]
	if ctx == nil {
		ctx = context.Background()
	}
	done := s.fromPrefetch(p, off)
	if done == len(p) {
		return done, nil
	}
	for attempt := 1; ; attempt++ {
		one := [1]source.Piece{{Buf: p[done:]}}
		n, err := s.get(ctx, one[:], off+int64(done), int64(len(p)-done), false)
		done += int(n)
		if err == nil {
			return done, nil
		}
		if attempt >= s.opt.Retries || !retryable(err) || !s.backoff(ctx, attempt, err) {
			return done, classify("GET "+s.shown+" "+rangeHeader(off, int64(len(p))), attempt, err)
		}
	}
}

// stat learns the size and validators: HEAD, and when HEAD is refused or
// says nothing of the length (servers that answer only GET, presigned
// URLs signed for GET), a GET of the first byte, whose Content-Range
// carries the length and whose error body names the S3 error.
func (s *Source) stat(ctx context.Context) error {
	var err error
	attempt := 1
	for ; ; attempt++ {
		err = s.head(ctx)
		if err == nil || attempt >= s.opt.Retries || !retryable(err) || !s.backoff(ctx, attempt, err) {
			break
		}
	}
	if err == nil {
		return nil
	}
	var he *httpError
	refused := errorsAs(err, &he) && he.Status >= 400 && he.Status < 500 && he.Status != 429
	if !refused && err != errNoLength {
		return classify("HEAD "+s.shown, attempt, err)
	}
	var one [1]byte
	for attempt = 1; ; attempt++ {
		_, err = s.get(ctx, []source.Piece{{Buf: one[:]}}, 0, 1, true)
		if err == nil || attempt >= s.opt.Retries || !retryable(err) || !s.backoff(ctx, attempt, err) {
			break
		}
	}
	if err != nil {
		return classify("GET "+s.shown+" bytes=0-0", attempt, err)
	}
	return nil
}

func (s *Source) head(ctx context.Context) error {
	actx, cancel := s.attemptCtx(ctx)
	defer cancel()
	resp, t0, err := s.send(actx, http.MethodHead, "", false)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return readHTTPError(resp)
	}
	// The open's round trip is a latency like any answer's: the first
	// fan-out's hole comes from it (coalesce.go), not from a guess.
	s.meter.record(time.Since(t0), 0, 0)
	if resp.ContentLength < 0 {
		return errNoLength
	}
	s.size = resp.ContentLength
	s.mu.Lock()
	s.etag, s.lastMod = resp.Header.Get("ETag"), resp.Header.Get("Last-Modified")
	s.young = youngAt(resp.Header)
	s.mu.Unlock()
	return nil
}

// get runs one GET of want bytes at off, its body streamed through
// pieces in order (ReadAt passes one, ReadScatter those of a coalesced
// request, holes included), and returns the bytes consumed. With probe
// it is the size probe of stat: any length is taken, and an empty object
// (416 with "bytes */0") is size 0.
func (s *Source) get(ctx context.Context, pieces []source.Piece, off, want int64, probe bool) (int64, error) {
	actx, cancel := s.attemptCtx(ctx)
	defer cancel()
	resp, t0, err := s.send(actx, http.MethodGet, rangeHeader(off, want), true)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	t1 := time.Now()
	switch {
	case probe && resp.StatusCode == http.StatusRequestedRangeNotSatisfiable:
		cr, err := parseContentRange(resp.Header.Get("Content-Range"))
		if err != nil || cr.First != -1 || cr.Total != 0 {
			return 0, readHTTPError(resp)
		}
		s.size = 0
		return 0, s.validate(resp)
	case resp.StatusCode == http.StatusPartialContent:
		cr, err := parseContentRange(resp.Header.Get("Content-Range"))
		if err != nil {
			return 0, &protocolError{err.Error()}
		}
		if probe {
			if cr.Total < 0 || cr.First != 0 {
				return 0, &protocolError{"the answer to bytes=0-0 has Content-Range " + clip(resp.Header.Get("Content-Range"), 80)}
			}
			s.size = cr.Total
			want = cr.Last + 1
		} else {
			if cr.First != off || cr.Last != off+want-1 {
				return 0, &protocolError{"asked for " + rangeHeader(off, want) + ", the server sent Content-Range " +
					clip(resp.Header.Get("Content-Range"), 80)}
			}
			if cr.Total >= 0 && cr.Total != s.size {
				return 0, &changedError{"its size was " + strconv.FormatInt(s.size, 10) + " at open and is " +
					strconv.FormatInt(cr.Total, 10) + " now"}
			}
		}
	case resp.StatusCode == http.StatusOK:
		// The server ignored Range. Only a request for the whole object
		// may take that answer: anything else would be sliced.
		if probe && resp.ContentLength >= 0 {
			s.size, want = resp.ContentLength, min(want, resp.ContentLength)
		} else if off != 0 || want != s.size || resp.ContentLength != s.size {
			return 0, &protocolError{"the server ignored the Range header (200 with the whole object for " +
				rangeHeader(off, want) + ")"}
		}
	default:
		return 0, readHTTPError(resp)
	}
	if err := s.validate(resp); err != nil {
		return 0, err
	}
	if !probe && resp.ContentLength >= 0 && resp.ContentLength != want {
		return 0, &protocolError{"a body of " + strconv.FormatInt(resp.ContentLength, 10) + " bytes for " +
			rangeHeader(off, want) + " (" + strconv.FormatInt(want, 10) + " bytes)"}
	}
	n, err := s.readBody(actx, resp.Body, pieces, want)
	if err != nil {
		return n, causeOf(actx, err)
	}
	s.meter.record(t1.Sub(t0), n, time.Since(t1))
	if probe {
		return 0, nil
	}
	return n, nil
}

// readBody reads want bytes of the body through pieces: straight into
// their buffers, the holes into a small discard buffer, resetting the idle
// timer at every read; then it checks that the body ends there.
func (s *Source) readBody(actx context.Context, body io.Reader, pieces []source.Piece, want int64) (int64, error) {
	idle := time.AfterFunc(s.opt.IdleTimeout, func() { cancelOf(actx)(errIdle) })
	defer idle.Stop()
	var r io.Reader = idleReader{body, idle, s.opt.IdleTimeout} // converted once, not per piece
	var n int64
	for _, pc := range pieces {
		if n >= want {
			break
		}
		var m int64
		var err error
		if pc.Buf != nil {
			var k int
			k, err = io.ReadFull(r, pc.Buf[:min(int64(len(pc.Buf)), want-n)])
			m = int64(k)
		} else {
			m, err = discard(r, min(pc.Skip, want-n))
		}
		n += m
		if err != nil {
			return n, err
		}
	}
	var one [1]byte
	if m, _ := body.Read(one[:]); m > 0 {
		return n, &protocolError{"the body is longer than the range asked for"}
	}
	return n, nil
}

type idleReader struct {
	r    io.Reader
	t    *time.Timer
	idle time.Duration
}

func (r idleReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if n > 0 {
		r.t.Reset(r.idle)
	}
	return n, err
}

// preconditions makes the server refuse to answer for another version of
// the object: If-Match with a strong ETag (a weak one never matches), else
// If-Unmodified-Since.
func (s *Source) preconditions(req *http.Request) {
	s.mu.Lock()
	etag, lm := s.etag, s.lastMod
	s.mu.Unlock()
	switch {
	case etag != "" && !strings.HasPrefix(etag, "W/"):
		req.Header.Set("If-Match", etag)
	case lm != "":
		req.Header.Set("If-Unmodified-Since", lm)
	}
}

// validate checks the answer's validators against the ones at open, for
// servers that ignore If-Match; the first answer sets them when the open
// made no request (size given).
func (s *Source) validate(resp *http.Response) error {
	etag, lm := resp.Header.Get("ETag"), resp.Header.Get("Last-Modified")
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.etag == "" && s.lastMod == "" {
		s.etag, s.lastMod = etag, lm
		s.young = youngAt(resp.Header)
		return nil
	}
	if s.etag != "" && etag != "" && etag != s.etag {
		return &changedError{"ETag " + clip(s.etag, 80) + " at open, " + clip(etag, 80) + " now"}
	}
	if s.etag == "" && s.lastMod != "" && lm != "" && lm != s.lastMod {
		return &changedError{"Last-Modified " + s.lastMod + " at open, " + lm + " now"}
	}
	return nil
}

// send makes one request: method, the Range header rng (none when
// empty), the preconditions of an object seen before (precond), signed
// for S3. It returns the answer and when it was sent; the caller closes
// the body. A transport error is the attempt's cause (causeOf).
func (s *Source) send(actx context.Context, method, rng string, precond bool) (*http.Response, time.Time, error) {
	req, err := s.request(actx, method)
	if err != nil {
		return nil, time.Time{}, err
	}
	if rng != "" {
		req.Header.Set("Range", rng)
	}
	if precond {
		s.preconditions(req)
	}
	if s.sign != nil {
		if err := s.sign(actx, req); err != nil {
			return nil, time.Time{}, err
		}
	}
	t0 := time.Now()
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, t0, causeOf(actx, err)
	}
	return resp, t0, nil
}

func (s *Source) request(ctx context.Context, method string) (*http.Request, error) {
	u := *s.target
	req, err := http.NewRequestWithContext(ctx, method, "", nil)
	if err != nil {
		return nil, err
	}
	req.URL, req.Host = &u, u.Host
	for k, v := range s.opt.Header {
		req.Header[k] = v
	}
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", "colio")
	}
	return req, nil
}

type cancelKey struct{}

// attemptCtx is one attempt's context: under the source's root (Abort)
// and the caller's ctx, with request_timeout, and cancellable with a cause
// by the idle timer.
func (s *Source) attemptCtx(ctx context.Context) (context.Context, func()) {
	c, cancel := context.WithCancelCause(s.root)
	stop := context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })
	t, cancelT := context.WithTimeoutCause(c, s.opt.RequestTimeout, errRequestTimeout)
	t = context.WithValue(t, cancelKey{}, cancel)
	return t, func() { stop(); cancelT(); cancel(nil) }
}

func cancelOf(ctx context.Context) context.CancelCauseFunc {
	return ctx.Value(cancelKey{}).(context.CancelCauseFunc)
}

// causeOf is err, or why colio ended the attempt when it did.
func causeOf(ctx context.Context, err error) error {
	if c := context.Cause(ctx); c == errIdle || c == errRequestTimeout || c == errClosed {
		return c
	}
	return err
}

// backoff sleeps before attempt+1: exponential from 100 ms up to 5 s, half
// of it random (jitter, so that many failed requests do not come back at
// once), or what a Retry-After of at most 30 s asks. It returns false when
// the source was closed meanwhile.
func (s *Source) backoff(ctx context.Context, attempt int, err error) bool {
	d := min(100*time.Millisecond<<min(attempt-1, 10), 5*time.Second)
	d = d/2 + rand.N(d/2+1)
	var he *httpError
	if errorsAs(err, &he) && he.retryAfter > 0 {
		d = min(he.retryAfter, 30*time.Second)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-s.root.Done():
	case <-ctx.Done():
	}
	return false
}

// redactURL keeps what identifies an object and drops what authorises a
// request: user info, and the values of query parameters that look like
// signatures, credentials or tokens (presigned URLs).
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		if i := strings.IndexAny(raw, "?#"); i >= 0 {
			raw = raw[:i]
		}
		return clip(raw, 200)
	}
	u.User = nil
	u.Fragment = ""
	if u.RawQuery != "" {
		q := u.Query()
		for k := range q {
			lk := strings.ToLower(k)
			for _, bad := range []string{"sig", "token", "credential", "key", "secret", "auth", "password", "session"} {
				if strings.Contains(lk, bad) {
					q[k] = []string{"REDACTED"}
				}
			}
		}
		u.RawQuery = q.Encode()
	}
	return u.String()
}
