package remote

import (
	"context"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/colio-dev/colio/internal/errs"
	"github.com/colio-dev/colio/internal/sink"
)

// Sink writes an S3 object with a multipart upload that is published only
// by Close.
//
// Parts. The object is cut at fixed offsets into parts of part_size
// (COLIO_S3_PART_SIZE, at least S3's 5 MiB). A write is copied into the
// parts it covers, and a part whose every byte has been written is
// uploaded at once, on a goroutine of the sink's own: at most
// max_in_flight uploads run at a time (the remote in-flight limit, not
// the COLIO_NTHREADS I/O slots, which only do the copies). Appends and
// writes at offsets mix freely, in any order; parts are assembled by part
// number, which is their offset. A byte never written reads as zero, as in
// a file with a hole. A sink that never fills its first part is one PUT
// at Close.
//
// Durability. A write is done (its future completes) when every part it
// touched has been acknowledged. Bytes in a part that is not yet full wait
// for the writes that fill it, or for Close, which uploads the last part
// and any part with holes: waiting on such a write before Close waits for
// Close. Flush waits for the uploads in flight.
//
// Memory. The sink holds (parts being filled + complete parts not yet
// acknowledged) x part_size. Complete parts are bounded: a write that
// would pass buffer_size bytes of them (COLIO_S3_BUFFER_SIZE, default
// 512 MiB, 64 parts of 8 MiB) waits until an upload ends, so a writer faster than
// the network is slowed, never buffered without bound. Parts being filled
// are what the caller chose to leave incomplete (far-apart offsets); a
// sequential writer has one.
//
// Never half an object. Any failed part (after the retries), a write
// error, Abort (the engine's, for an exception in a with block or a
// cancelled write) ends every upload in flight, fails the writes not yet
// durable and sends AbortMultipartUpload once nothing is in flight: the
// object keeps its old content or stays absent. A byte written into a part
// already uploaded is refused (S3 cannot change a part once sent) and
// fails the upload.
type Sink struct {
	src      *Source
	partSize int64
	bufSize  int64

	ctx    context.Context // part uploads: ended by a failure or Abort
	cancel context.CancelCauseFunc
	sem    chan struct{} // max_in_flight

	mu       sync.Mutex
	changed  *sync.Cond // held or running fell, or err was set
	parts    map[int64]*part
	etags    map[int64]string // acknowledged parts, by index
	size     int64            // the highest end written
	held     int64            // bytes of complete parts not yet acknowledged
	running  int              // upload goroutines
	sent     int              // parts ever sent
	uploadID string
	creating chan struct{} // non-nil while CreateMultipartUpload runs
	free     [][]byte      // acknowledged parts' buffers, for reuse (newBuf)
	err      error         // sticky: set once, and the upload is then aborted
	closing  bool
	done     bool // Close or Abort finished

	abortOnce sync.Once
	abortErr  error
}

// part is one part being filled or uploaded.
type part struct {
	buf     []byte
	have    []span // written spans, sorted and merged, relative to the part
	copying int    // writes copying into buf now (unlocked)
	waiters []*waiter
	sent    bool
}

type span struct{ a, b int64 }

// waiter is one write: done runs when its last part is acknowledged.
type waiter struct {
	left int
	done func(error)
}

var _ sink.Durable = (*Sink)(nil)

// OpenSink opens s3://bucket/key for writing with the options and
// credentials of a source (s3.go). Nothing is sent until the first part is
// complete or Close; credentials are checked at open only for being
// there.
func OpenSink(ctx context.Context, rawURL string, o Options) (*Sink, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	if len(rawURL) < 5 || rawURL[:5] != "s3://" {
		return nil, errs.New(errs.NotSupported, "colio: URL sinks write s3:// URLs, not %q", redactURL(rawURL))
	}
	src := &Source{opt: o, size: 0}
	src.root, src.abort = context.WithCancelCause(context.Background())
	t, err := transportFor(o)
	if err != nil {
		return nil, err
	}
	src.client = &http.Client{Transport: t}
	if err := src.openS3(ctx, rawURL); err != nil {
		return nil, err
	}
	k := &Sink{src: src, partSize: o.PartSize, bufSize: max(o.BufferSize, o.PartSize),
		sem: make(chan struct{}, o.MaxInFlight), parts: map[int64]*part{}, etags: map[int64]string{}}
	if k.partSize <= 0 {
		k.partSize = DefaultPartSize
	}
	k.changed = sync.NewCond(&k.mu)
	k.ctx, k.cancel = context.WithCancelCause(context.Background())
	return k, nil
}

// URL is the object's URL as messages show it.
func (k *Sink) URL() string { return k.src.shown }

func (k *Sink) AppendStart() int64 { return 0 }

func (k *Sink) Traits() sink.Traits { return sink.Traits{Concurrent: true} }

// WriteAt writes p and waits until its bytes are durable (see the type's
// note: bytes of an incomplete part wait for later writes or Close).
func (k *Sink) WriteAt(ctx context.Context, p []byte, off int64) (int, error) {
	ch := make(chan error, 1)
	n, err := k.WriteAtDurable(ctx, p, off, func(err error) { ch <- err })
	if err != nil {
		return n, err
	}
	if err := <-ch; err != nil {
		return 0, err
	}
	return n, nil
}

func (k *Sink) WriteAtDurable(_ context.Context, p []byte, off int64, done func(error)) (int, error) {
	if len(p) == 0 {
		done(nil)
		return 0, nil
	}
	end := off + int64(len(p))
	ps := k.partSize
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.err != nil {
		return 0, k.err
	}
	if k.closing {
		return 0, errs.New(errs.Closed, "colio: %s: the sink is closed", k.src.shown)
	}
	if end > MaxParts*ps {
		return 0, k.failLocked(errs.New(errs.NotSupported,
			"colio: %s: a write ending at offset %d passes S3's %d parts of part_size=%d; raise part_size",
			k.src.shown, end, MaxParts, ps))
	}
	first, last := off/ps, (end-1)/ps
	for i := first; i <= last; i++ {
		if pt := k.parts[i]; pt != nil && pt.sent || k.etags[i] != "" {
			return 0, k.failLocked(errs.New(errs.NotSupported,
				"colio: %s: a write at offset %d overwrites part %d, already uploaded (an S3 sink takes each byte "+
					"before its part is complete and sent; the upload was aborted)", k.src.shown, off, i+1))
		}
	}
	w := &waiter{left: int(last - first + 1), done: done}
	k.size = max(k.size, end)
	type piece struct {
		i, a, b int64
		pt      *part
	}
	pieces := make([]piece, 0, last-first+1)
	for i := first; i <= last; i++ {
		pt := k.parts[i]
		if pt == nil {
			pt = &part{buf: k.newBuf()}
			k.parts[i] = pt
		}
		pt.copying++
		pt.waiters = append(pt.waiters, w)
		pieces = append(pieces, piece{i, max(off, i*ps) - i*ps, min(end, (i+1)*ps) - i*ps, pt})
	}
	// The copies run unlocked, so the I/O slots copy in parallel; a part
	// is sent only once no copy into it is running.
	k.mu.Unlock()
	for _, c := range pieces {
		copy(c.pt.buf[c.a:c.b], p[c.i*ps+c.a-off:c.i*ps+c.b-off])
	}
	k.mu.Lock()
	for _, c := range pieces {
		c.pt.copying--
		c.pt.add(c.a, c.b)
		if c.pt.copying == 0 && !c.pt.sent && k.err == nil && len(c.pt.have) == 1 && c.pt.have[0] == (span{0, ps}) {
			k.sendLocked(c.i, c.pt)
		}
	}
	return len(p), nil
}

// maxFree bounds the part buffers a sink keeps for its own reuse: enough
// to spare most page faults of fresh ones in a steady stream, little to
// hold when idle.
const maxFree = 16

// partPools holds acknowledged parts' buffers between sinks, one
// sync.Pool per part size: a process writing one object after another
// (a Dask worker, cp of many files) would otherwise fault in every part
// of every object afresh, since a sink's own buffers die with it; the
// kernel zeroing those pages cost colio more system time than obstore's
// whole upload (0.65 s against 0.14 s for 512 MiB here). A sync.Pool lets
// the garbage collector take what is not reused, so idle memory is not
// held.
var partPools sync.Map // int64 -> *sync.Pool

func partPool(size int64) *sync.Pool {
	if p, ok := partPools.Load(size); ok {
		return p.(*sync.Pool)
	}
	p, _ := partPools.LoadOrStore(size, &sync.Pool{})
	return p.(*sync.Pool)
}

// newBuf is a part buffer, reused when one is free (the sink's own, then
// the pool's). A reused buffer holds old bytes: Close zeroes the gaps of
// the parts it sends with holes, and full parts have none.
func (k *Sink) newBuf() []byte {
	if n := len(k.free); n > 0 {
		b := k.free[n-1]
		k.free = k.free[:n-1]
		return b
	}
	if b, ok := partPool(k.partSize).Get().(*[]byte); ok {
		return *b
	}
	freshParts.Add(1)
	return make([]byte, k.partSize)
}

// freshParts counts part buffers made new (the tests see the pool work).
var freshParts atomic.Int64

// recycle keeps an acknowledged part's buffer for this sink or, past
// maxFree, for the next sink of its part size.
func (k *Sink) recycle(b []byte) {
	if int64(cap(b)) != k.partSize {
		return
	}
	b = b[:k.partSize]
	if len(k.free) < maxFree {
		k.free = append(k.free, b)
		return
	}
	partPool(k.partSize).Put(&b)
}

// zeroGaps zeroes the bytes of [0, n) no write covered.
func (pt *part) zeroGaps(n int64) {
	at := int64(0)
	for _, s := range pt.have {
		if s.a > at {
			clear(pt.buf[at:min(s.a, n)])
		}
		at = max(at, s.b)
	}
	if at < n {
		clear(pt.buf[at:n])
	}
}

// add records [a, b) as written.
func (pt *part) add(a, b int64) {
	pt.have = append(pt.have, span{a, b})
	sort.Slice(pt.have, func(i, j int) bool { return pt.have[i].a < pt.have[j].a })
	out := pt.have[:1]
	for _, s := range pt.have[1:] {
		if last := &out[len(out)-1]; s.a <= last.b {
			last.b = max(last.b, s.b)
		} else {
			out = append(out, s)
		}
	}
	pt.have = out
}

// sendLocked starts the upload of part i once the complete parts held
// leave room for it (buffer_size): the bound on memory, and the
// backpressure a writer ahead of the network meets (it waits here, on its
// I/O slot, while uploads, which need no slot, drain).
func (k *Sink) sendLocked(i int64, pt *part) {
	pt.sent = true
	k.sent++
	for k.held > 0 && k.held+int64(len(pt.buf)) > k.bufSize && k.err == nil {
		k.changed.Wait()
	}
	if k.err != nil {
		return // failLocked failed its writes
	}
	k.held += int64(len(pt.buf))
	k.running++
	go k.upload(i, pt)
}

func (k *Sink) upload(i int64, pt *part) {
	var etag string
	var err error
	select {
	case k.sem <- struct{}{}:
		id, cerr := k.ensureUpload()
		err = cerr
		if err == nil {
			etag, err = k.uploadPart(k.ctx, id, int(i)+1, pt.buf)
		}
		<-k.sem
	case <-k.ctx.Done():
		err = context.Cause(k.ctx)
	}
	k.mu.Lock()
	k.held -= int64(len(pt.buf))
	k.running--
	var ready []*waiter
	if err != nil {
		k.failLocked(err)
	} else if k.err == nil {
		k.etags[i] = etag
		delete(k.parts, i)
		k.recycle(pt.buf)
		pt.buf = nil
		ready = pt.finishLocked()
	}
	k.changed.Broadcast()
	k.mu.Unlock()
	for _, w := range ready {
		w.done(nil)
	}
}

// finishLocked counts the part off its writes and returns those it was the
// last part of.
func (pt *part) finishLocked() []*waiter {
	var ready []*waiter
	for _, w := range pt.waiters {
		if w.left > 0 {
			w.left--
			if w.left == 0 {
				ready = append(ready, w)
			}
		}
	}
	pt.waiters = nil
	return ready
}

// ensureUpload creates the multipart upload once. It runs under no context
// of the sink's: an upload created while an abort was on its way must be
// learnt, to be aborted too.
func (k *Sink) ensureUpload() (string, error) {
	k.mu.Lock()
	for k.creating != nil {
		ch := k.creating
		k.mu.Unlock()
		<-ch
		k.mu.Lock()
	}
	if k.uploadID != "" || k.err != nil {
		id, err := k.uploadID, k.err
		k.mu.Unlock()
		return id, err
	}
	ch := make(chan struct{})
	k.creating = ch
	k.mu.Unlock()
	id, err := k.createUpload(context.Background())
	k.mu.Lock()
	k.uploadID, k.creating = id, nil
	close(ch)
	if err == nil && k.err != nil {
		err = k.err
	}
	k.mu.Unlock()
	return id, err
}

// failLocked makes err the sink's sticky error (if it is the first), ends
// the uploads in flight and fails every write not yet durable. It returns
// the sticky error.
func (k *Sink) failLocked(err error) error {
	if k.err != nil {
		return k.err
	}
	k.err = err
	k.cancel(err)
	var ready []*waiter
	for _, pt := range k.parts {
		for _, w := range pt.waiters {
			if w.left > 0 {
				w.left = 0
				ready = append(ready, w)
			}
		}
		pt.waiters = nil
	}
	k.changed.Broadcast()
	// The callbacks complete futures through the notifier; they never
	// call back into the sink, but they are not run under its lock.
	go func() {
		for _, w := range ready {
			w.done(err)
		}
	}()
	return err
}

// abortLocked sends AbortMultipartUpload once no upload runs; it returns
// with k.mu held.
func (k *Sink) abortLocked() error {
	for k.running > 0 || k.creating != nil {
		k.changed.Wait()
	}
	id := k.uploadID
	k.mu.Unlock()
	k.abortOnce.Do(func() {
		if id != "" {
			k.abortErr = k.abortUpload(context.Background(), id)
		}
	})
	k.mu.Lock()
	return k.abortErr
}

// Flush waits for the uploads of complete parts in flight and returns the
// sticky error. It cannot send a part that is not full: S3 wants every
// part but the last to be at least 5 MiB.
func (k *Sink) Flush(context.Context, bool) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	for k.running > 0 && k.err == nil {
		k.changed.Wait()
	}
	return k.err
}

// Abort fails the writes not yet durable with why and aborts the upload;
// the object is left as it was. After Close succeeded it does nothing.
func (k *Sink) Abort(why error) error {
	if why == nil {
		why = errs.New(errs.Cancelled, "colio: %s: the upload was aborted", k.src.shown)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.done && k.err == nil {
		return nil
	}
	k.closing = true
	k.failLocked(why)
	return k.abortLocked()
}

// Close publishes the object: the remaining parts (the last one, and any
// with holes, zero-filled) are sent, then CompleteMultipartUpload, or one
// PUT when no part was ever complete. On any failure the upload is aborted
// and the error returned.
func (k *Sink) Close() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.done {
		return k.err
	}
	k.closing = true
	defer func() {
		k.done = true
		for _, b := range k.free { // for the next sink
			b := b
			partPool(k.partSize).Put(&b)
		}
		k.free = nil
	}()
	if k.err != nil {
		k.abortLocked()
		return k.err
	}
	if k.sent == 0 && k.size <= k.partSize {
		var body []byte
		var ready []*waiter
		if pt := k.parts[0]; pt != nil {
			body = pt.buf[:k.size]
			pt.zeroGaps(k.size)
			ready = pt.finishLocked()
		}
		k.mu.Unlock()
		err := k.putObject(k.ctx, body)
		k.mu.Lock()
		if err != nil {
			for _, w := range ready {
				w.left = 1 // failLocked fails it
			}
			k.parts[0] = &part{waiters: ready}
			return k.failLocked(err)
		}
		delete(k.parts, 0)
		k.mu.Unlock()
		for _, w := range ready {
			w.done(nil)
		}
		k.mu.Lock()
		return nil
	}
	last := (k.size - 1) / k.partSize
	for i := int64(0); i <= last; i++ {
		if k.etags[i] != "" {
			continue
		}
		pt := k.parts[i]
		if pt == nil {
			pt = &part{buf: k.newBuf()}
			k.parts[i] = pt
		}
		if pt.sent {
			continue
		}
		if i == last {
			pt.buf = pt.buf[:k.size-i*k.partSize]
		}
		pt.zeroGaps(int64(len(pt.buf)))
		k.sendLocked(i, pt)
	}
	for k.running > 0 && k.err == nil {
		k.changed.Wait()
	}
	if k.err != nil {
		k.abortLocked()
		return k.err
	}
	etags, id := k.etags, k.uploadID
	k.mu.Unlock()
	err := k.completeUpload(context.Background(), id, etags)
	k.mu.Lock()
	if err != nil {
		k.failLocked(err)
		k.abortLocked()
		return err
	}
	return nil
}
