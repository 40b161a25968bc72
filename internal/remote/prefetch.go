package remote

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/colio-dev/colio/internal/source"
)

// Prefetch (the prefetch=N option): the open is a ranged GET of the first
// N bytes instead of a HEAD. Its answer gives what a HEAD would (the size
// from Content-Range, the validators) and its body is kept, so reads
// inside it are served from memory: an object of at most N bytes (a zarr
// chunk, a small JSON) costs one round trip in all instead of two. The
// kept bytes are the version the validators name, like every later answer
// (If-Match), so no read mixes two versions.
//
// prefetch_tail=N keeps the last N bytes instead (bytes=-N): a Parquet
// footer or a zip's central directory then comes with the open, which is
// one round trip fewer for every reader that starts at the end.

// MaxPrefetch bounds prefetch: the body is one request and one Go
// allocation, which cannot fail gracefully.
const MaxPrefetch = 1 << 30

// prefetch learns the size and validators and keeps the first
// opt.Prefetch bytes, retried as stat is.
func (s *Source) prefetch(ctx context.Context) error {
	var err error
	attempt := 1
	get, what := s.getPrefix, rangeHeader(0, s.opt.Prefetch)
	n := s.opt.Prefetch
	if s.opt.PrefetchTail > 0 {
		get, what, n = s.getSuffix, "bytes=-"+strconv.FormatInt(s.opt.PrefetchTail, 10), s.opt.PrefetchTail
	}
	for ; ; attempt++ {
		err = get(ctx, n)
		if err == nil || attempt >= s.opt.Retries || !retryable(err) || !s.backoff(ctx, attempt, err) {
			break
		}
	}
	if err != nil {
		return classify("GET "+s.shown+" "+what, attempt, err)
	}
	return nil
}

// getPrefix is one attempt: GET bytes=0-(n-1). A 206 names the size; a
// 200 (Range ignored) is the whole object, kept when it fits in n (larger,
// its first n bytes are kept and a read past them meets the ignored Range
// again); a 416 with "bytes */0" is the empty object.
func (s *Source) getPrefix(ctx context.Context, n int64) error {
	actx, cancel := s.attemptCtx(ctx)
	defer cancel()
	resp, t0, err := s.send(actx, http.MethodGet, rangeHeader(0, n), false)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	t1 := time.Now()
	size, want := int64(-1), int64(0)
	switch resp.StatusCode {
	case http.StatusRequestedRangeNotSatisfiable:
		cr, err := parseContentRange(resp.Header.Get("Content-Range"))
		if err != nil || cr.First != -1 || cr.Total != 0 {
			return readHTTPError(resp)
		}
		size = 0
	case http.StatusPartialContent:
		cr, err := parseContentRange(resp.Header.Get("Content-Range"))
		if err != nil {
			return &protocolError{err.Error()}
		}
		// A server may send less than asked (a range it caps), never more
		// nor from elsewhere.
		if cr.First != 0 || cr.Total < 0 || cr.Last >= n || cr.Last >= cr.Total {
			return &protocolError{"asked for " + rangeHeader(0, n) + ", the server sent Content-Range " +
				clip(resp.Header.Get("Content-Range"), 80)}
		}
		size, want = cr.Total, cr.Last+1
		if resp.ContentLength >= 0 && resp.ContentLength != want {
			return &protocolError{"a body of " + strconv.FormatInt(resp.ContentLength, 10) + " bytes for " +
				rangeHeader(0, want)}
		}
	case http.StatusOK:
		if resp.ContentLength >= 0 {
			size, want = resp.ContentLength, min(n, resp.ContentLength)
		}
	default:
		return readHTTPError(resp)
	}
	if err := s.validate(resp); err != nil {
		return err
	}
	var body []byte
	var got int64
	switch {
	case size == 0:
	case size < 0: // 200 without a length: whole only if it ends within n
		idle := time.AfterFunc(s.opt.IdleTimeout, func() { cancelOf(actx)(errIdle) })
		defer idle.Stop()
		var b bytes.Buffer
		m, err := b.ReadFrom(io.LimitReader(idleReader{resp.Body, idle, s.opt.IdleTimeout}, n+1))
		if err != nil {
			return causeOf(actx, err)
		}
		if m > n {
			return &protocolError{"the server ignored the Range header and sent no length: the object's size is unknown"}
		}
		body, got, size = b.Bytes(), m, m
	default:
		body = make([]byte, want)
		var r io.Reader = resp.Body
		if resp.StatusCode == http.StatusOK {
			r = io.LimitReader(r, want) // the rest of the object is not wanted
		}
		got, err = s.readBody(actx, r, []source.Piece{{Buf: body}}, want)
		if err != nil {
			return causeOf(actx, err)
		}
	}
	s.size, s.pre = size, body[:got:got]
	s.meter.record(t1.Sub(t0), got, time.Since(t1))
	return nil
}

// fromPrefetch copies what the kept bytes hold of [off, off+len(p)) into
// p, from its start: nothing when off is before them (a read that
// begins there is one GET, as without a prefetch).
func (s *Source) fromPrefetch(p []byte, off int64) int {
	if off < s.preOff || off >= s.preOff+int64(len(s.pre)) {
		return 0
	}
	return copy(p, s.pre[off-s.preOff:])
}

// scatterPrefetch fills the pieces' first bytes from the kept ones and
// returns how many of the layout's bytes (holes included) they covered.
func (s *Source) scatterPrefetch(pieces []source.Piece, off, total int64) int64 {
	if off < s.preOff {
		return 0
	}
	have := min(total, s.preOff+int64(len(s.pre))-off)
	if have <= 0 {
		return 0
	}
	kept := s.pre[off-s.preOff:]
	var at int64
	for _, pc := range pieces {
		if at >= have {
			break
		}
		if pc.Buf != nil {
			copy(pc.Buf[:min(int64(len(pc.Buf)), have-at)], kept[at:])
		}
		at += pieceLen(pc)
	}
	return have
}

// whole is whether the kept bytes are the entire object: the source is
// then memory, with none of a network's latency.
func (s *Source) whole() bool {
	return (s.opt.Prefetch > 0 || s.opt.PrefetchTail > 0) && s.preOff == 0 && int64(len(s.pre)) == s.size
}

// getSuffix is one attempt of the tail's open: GET bytes=-n. A 206 names
// the size and where the tail starts (it must end at the object's end);
// a 200 (Range ignored) is the whole object, kept when it fits in n and
// otherwise left unread (a later read meets the ignored Range); a 416
// with "bytes */0", or an empty answer, is the empty object.
func (s *Source) getSuffix(ctx context.Context, n int64) error {
	actx, cancel := s.attemptCtx(ctx)
	defer cancel()
	resp, t0, err := s.send(actx, http.MethodGet, "bytes=-"+strconv.FormatInt(n, 10), false)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	t1 := time.Now()
	var size, from, want int64
	switch resp.StatusCode {
	case http.StatusRequestedRangeNotSatisfiable:
		cr, err := parseContentRange(resp.Header.Get("Content-Range"))
		if err != nil || cr.First != -1 || cr.Total != 0 {
			return readHTTPError(resp)
		}
	case http.StatusPartialContent:
		cr, err := parseContentRange(resp.Header.Get("Content-Range"))
		if err != nil {
			return &protocolError{err.Error()}
		}
		// The last bytes, at most n of them: a tail that does not end at
		// the object's end, or is longer than asked, is not one.
		if cr.Total < 0 || cr.Last != cr.Total-1 || cr.Last-cr.First+1 > n || cr.First < 0 {
			return &protocolError{"asked for bytes=-" + strconv.FormatInt(n, 10) +
				", the server sent Content-Range " + clip(resp.Header.Get("Content-Range"), 80)}
		}
		size, from, want = cr.Total, cr.First, cr.Last-cr.First+1
		if resp.ContentLength >= 0 && resp.ContentLength != want {
			return &protocolError{"a body of " + strconv.FormatInt(resp.ContentLength, 10) +
				" bytes for bytes=-" + strconv.FormatInt(n, 10)}
		}
	case http.StatusOK:
		if resp.ContentLength < 0 {
			return &protocolError{"the server ignored the Range header and sent no length: the object's size is unknown"}
		}
		size = resp.ContentLength
		if size <= n {
			want = size
		}
	default:
		return readHTTPError(resp)
	}
	if err := s.validate(resp); err != nil {
		return err
	}
	body := make([]byte, want)
	if want > 0 {
		got, err := s.readBody(actx, io.LimitReader(resp.Body, want), []source.Piece{{Buf: body}}, want)
		if err != nil {
			return causeOf(actx, err)
		}
		body = body[:got]
	}
	s.size, s.pre, s.preOff = size, body[:len(body):len(body)], from
	s.meter.record(t1.Sub(t0), int64(len(body)), time.Since(t1))
	return nil
}
