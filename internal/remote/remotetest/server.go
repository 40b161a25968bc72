// Package remotetest is a loopback HTTP and S3 server for colio's remote
// sources: their tests, the C and Python tests, and the benchmark.
//
// It serves the files of a directory over GET and HEAD with single byte
// ranges, and answers the path-style S3 requests a reader makes (GET and
// HEAD of /bucket/key, HEAD of /bucket with x-amz-bucket-region, S3 XML
// errors), with an injected latency before each answer. It counts the
// requests it is serving at once and reports the peak at GET /_stats, so a
// benchmark or a test can prove from outside the client how many requests
// were really in flight.
//
// Faults are chosen per request by a path prefix, so one server serves
// every case of a test: /_fault/MODE[,MODE...]/rest serves /rest with the
// faults (faults.go).
package remotetest

import (
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// Options configure a Server.
type Options struct {
	Dir     string        // the files served; /a/b is Dir/a/b (for S3: bucket a, key b)
	Latency time.Duration // slept before every answer (headers), as an object store's first byte
	Region  string        // reported for HEAD /bucket (default us-east-1)
	// Key and Secret, when both are set, make S3 requests that carry an
	// Authorization header be verified with the SDK's SigV4 signer; a
	// wrong one is answered SignatureDoesNotMatch or InvalidAccessKeyId.
	// Unsigned requests are served either way (anonymous reads).
	Key, Secret string
	// RequireAuth refuses unsigned requests (AccessDenied) when Key is set.
	RequireAuth bool
}

// Stats are the server's counters, as GET /_stats reports them.
type Stats struct {
	Requests     int64 `json:"requests"`
	InFlight     int64 `json:"in_flight"`
	PeakInFlight int64 `json:"peak_in_flight"`
	BytesSent    int64 `json:"bytes_sent"`
	Faults       int64 `json:"faults"` // answers changed by an injected fault
}

// Server is an http.Handler; Start also listens.
type Server struct {
	opt Options

	requests, inFlight, peak, bytes, faults atomic.Int64

	mu     sync.Mutex
	counts map[string]int // per fault path: requests seen (for "first N" faults)

	ln   net.Listener
	srv  *http.Server
	URL  string // http://127.0.0.1:PORT once started
	done chan struct{}

	up uploads // S3 writes (write.go)

	signerOnce sync.Once
	signer     *v4.Signer // verifies SigV4 (s3.go)
}

// New returns a server (a handler) for opt.
func New(opt Options) *Server {
	if opt.Region == "" {
		opt.Region = "us-east-1"
	}
	return &Server{opt: opt, counts: map[string]int{}, done: make(chan struct{})}
}

// Start serves on addr ("127.0.0.1:0" for any free port).
func Start(opt Options, addr string) (*Server, error) {
	s := New(opt)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s.ln = ln
	s.URL = "http://" + ln.Addr().String()
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: time.Minute}
	go s.srv.Serve(ln)
	return s, nil
}

// Close stops the server; requests held by a hang fault end at once.
func (s *Server) Close() error {
	select {
	case <-s.done:
	default:
		close(s.done)
	}
	if s.srv == nil {
		return nil
	}
	return s.srv.Close()
}

// Stats returns the counters now.
func (s *Server) Stats() Stats {
	return Stats{Requests: s.requests.Load(), InFlight: s.inFlight.Load(), PeakInFlight: s.peak.Load(),
		BytesSent: s.bytes.Load(), Faults: s.faults.Load()}
}

// ResetStats zeroes the counters (the peak restarts from the requests in
// flight now) and forgets the "first N requests" fault counts.
func (s *Server) ResetStats() {
	s.requests.Store(0)
	s.bytes.Store(0)
	s.faults.Store(0)
	s.peak.Store(s.inFlight.Load())
	s.mu.Lock()
	clear(s.counts)
	s.mu.Unlock()
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/_stats" {
		st := s.Stats()
		if r.URL.Query().Get("reset") != "" {
			s.ResetStats()
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(st)
		return
	}
	s.requests.Add(1)
	n := s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	for {
		p := s.peak.Load()
		if n <= p || s.peak.CompareAndSwap(p, n) {
			break
		}
	}
	f, rest, err := parseFaults(r.URL.Path)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if f.any() {
		s.mu.Lock()
		f.seen = s.counts[r.URL.Path]
		s.counts[r.URL.Path]++
		s.mu.Unlock()
	}
	lat := s.opt.Latency
	if f.latency >= 0 {
		lat = f.latency
	}
	if !s.sleep(r, lat) {
		return
	}
	s.serve(w, r, rest, f)
}

// sleep waits d unless the client or the server goes first.
func (s *Server) sleep(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
	case <-s.done:
	}
	return false
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request, p string, f faults) {
	write := isWrite(r)
	if !write && r.Method != http.MethodGet && r.Method != http.MethodHead {
		s3Error(w, r, http.StatusMethodNotAllowed, "MethodNotAllowed", "only GET, HEAD and S3 writes are served", p)
		return
	}
	// S3 names the bucket's region in every answer about it, refusals
	// included, which is how a client without a region finds it.
	w.Header().Set("x-amz-bucket-region", s.opt.Region)
	if f.apply(s, w, r, p) {
		s.faults.Add(1)
		return
	}
	if !s.authorised(w, r, p) {
		return
	}
	if write {
		s.serveWrite(w, r, p, f)
		return
	}
	clean := path.Clean("/" + p)
	name := filepath.Join(s.opt.Dir, filepath.FromSlash(clean))
	st, err := os.Stat(name)
	bucket, key, _ := strings.Cut(strings.TrimPrefix(clean, "/"), "/")
	switch {
	case err == nil && st.IsDir() && key == "" && bucket != "":
		// HEAD/GET /bucket: what region discovery asks.
		w.WriteHeader(http.StatusOK)
		return
	case err == nil && st.IsDir():
		s3Error(w, r, http.StatusNotFound, "NoSuchKey", "The specified key does not exist.", clean)
		return
	case errors.Is(err, fs.ErrNotExist):
		if _, berr := os.Stat(filepath.Join(s.opt.Dir, bucket)); bucket != "" && key != "" && berr != nil {
			s3Error(w, r, http.StatusNotFound, "NoSuchBucket", "The specified bucket does not exist", clean)
		} else {
			s3Error(w, r, http.StatusNotFound, "NoSuchKey", "The specified key does not exist.", clean)
		}
		return
	case err != nil:
		s3Error(w, r, http.StatusInternalServerError, "InternalError", err.Error(), clean)
		return
	}
	etag := fileETag(st)
	if f.etag {
		etag = fmt.Sprintf(`"%s-%d"`, strings.Trim(etag, `"`), f.seen)
	}
	s.serveFile(w, r, name, st.Size(), etag, st.ModTime(), f)
}

// fileETag is stable for an unchanged file and changes with its size or
// modification time, as an object store's does with its content.
func fileETag(st os.FileInfo) string {
	h := sha1.Sum([]byte(fmt.Sprintf("%d-%d", st.Size(), st.ModTime().UnixNano())))
	return `"` + hex.EncodeToString(h[:8]) + `"`
}

func (s *Server) serveFile(w http.ResponseWriter, r *http.Request, name string, size int64, etag string, mod time.Time, f faults) {
	h := w.Header()
	if !f.noETag {
		h.Set("ETag", etag)
		h.Set("Last-Modified", mod.UTC().Format(http.TimeFormat))
	}
	h.Set("Accept-Ranges", "bytes")
	if im := r.Header.Get("If-Match"); im != "" && !f.ignoreIfMatch && im != etag && im != "*" {
		s3Error(w, r, http.StatusPreconditionFailed, "PreconditionFailed",
			"At least one of the pre-conditions you specified did not hold", r.URL.Path)
		return
	}
	start, end, ranged, ok := parseRange(r.Header.Get("Range"), size)
	if !ok {
		h.Set("Content-Range", fmt.Sprintf("bytes */%d", size))
		s3Error(w, r, http.StatusRequestedRangeNotSatisfiable, "InvalidRange", "The requested range is not satisfiable", r.URL.Path)
		return
	}
	if f.ignoreRange {
		start, end, ranged = 0, size, false
	}
	n := end - start
	status := http.StatusOK
	if ranged {
		status = http.StatusPartialContent
		cs := start
		if f.badRange {
			cs++ // a Content-Range that is not the range asked for
		}
		h.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", cs, cs+n-1, size))
	}
	body := n
	if f.short && ranged && r.Method == http.MethodGet && n > 0 {
		body = n - 1 // an honest length, but fewer bytes than the range
	}
	h.Set("Content-Length", strconv.FormatInt(body, 10))
	w.WriteHeader(status)
	if r.Method == http.MethodHead || body == 0 {
		return
	}
	file, err := os.Open(name)
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	defer file.Close()
	if _, err := file.Seek(start, io.SeekStart); err != nil {
		panic(http.ErrAbortHandler)
	}
	switch {
	case f.drop:
		// Half the body, then the connection goes: a body cut short.
		m, _ := io.CopyN(w, file, body/2)
		s.bytes.Add(m)
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	case f.trickle > 0:
		buf := make([]byte, 1)
		for i := int64(0); i < body; i++ {
			if _, err := file.Read(buf); err != nil {
				return
			}
			if _, err := w.Write(buf); err != nil {
				return
			}
			s.bytes.Add(1)
			w.(http.Flusher).Flush()
			if !s.sleep(r, f.trickle) {
				return
			}
		}
	case f.rate > 0:
		// Each piece leaves when the rate says the bytes before it may
		// have: the body's time is body/rate whatever the machine's load.
		const piece = 32 << 10
		start := time.Now()
		for sent := int64(0); sent < body; {
			m, _ := io.CopyN(w, file, min(piece, body-sent))
			if m <= 0 {
				return
			}
			sent += m
			s.bytes.Add(m)
			w.(http.Flusher).Flush()
			due := time.Duration(float64(sent) / float64(f.rate) * float64(time.Second))
			if !s.sleep(r, due-time.Since(start)) {
				return
			}
		}
	default:
		m, _ := io.CopyN(w, file, body)
		s.bytes.Add(m)
	}
}

// parseRange reads a single "bytes=" range of a Range header against size:
// [start, end) and whether it was ranged; ok is false when the range is
// unsatisfiable. A header it does not understand is ignored, as RFC 9110
// allows, and the whole body served.
func parseRange(v string, size int64) (start, end int64, ranged, ok bool) {
	spec, found := strings.CutPrefix(v, "bytes=")
	if !found || strings.Contains(spec, ",") {
		return 0, size, false, true
	}
	a, b, found := strings.Cut(spec, "-")
	if !found {
		return 0, size, false, true
	}
	if a == "" { // suffix: the last b bytes
		n, err := strconv.ParseInt(b, 10, 64)
		if err != nil || n < 0 {
			return 0, size, false, true
		}
		if n == 0 || size == 0 { // RFC 9110: no suffix of an empty object is satisfiable
			return 0, 0, false, false
		}
		return max(size-n, 0), size, true, true
	}
	s, err := strconv.ParseInt(a, 10, 64)
	if err != nil || s < 0 {
		return 0, size, false, true
	}
	e := size - 1
	if b != "" {
		if e, err = strconv.ParseInt(b, 10, 64); err != nil || e < s {
			return 0, size, false, true
		}
	}
	if s >= size {
		return 0, 0, false, false
	}
	return s, min(e+1, size), true, true
}
