// colio-demo runs colio's main job on generated data: fan out reads of
// column-chunk-sized ranges of a local file, write them back with eager
// appends, check every byte, and show what eagerness buys against a source
// with object-store latency.
package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/colio-dev/colio/internal/engine"
	"github.com/colio-dev/colio/internal/fakes"
	"github.com/colio-dev/colio/internal/future"
	"github.com/colio-dev/colio/internal/sink"
	"github.com/colio-dev/colio/internal/source"
)

func main() {
	size := flag.Int("mib", 256, "size of the generated file in MiB")
	chunk := flag.Int("chunk-kib", 2048, "range size in KiB (one column chunk)")
	dir := flag.String("dir", "", "where to put the generated file (default: a temporary folder)")
	flag.Parse()
	if err := run(*size<<20, *chunk<<10, *dir); err != nil {
		fmt.Fprintln(os.Stderr, "colio-demo:", err)
		os.Exit(1)
	}
}

func waitAll(futs []*future.Future) (int64, error) {
	var total int64
	for _, f := range futs {
		n, err := f.WaitTimeout(-1)
		if err != nil {
			return total, err
		}
		total += n
	}
	return total, nil
}

func mbps(n int64, d time.Duration) float64 { return float64(n) / d.Seconds() / 1e6 }

func run(size, chunk int, dir string) error {
	if dir == "" {
		d, err := os.MkdirTemp("", "colio-demo")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	e, err := engine.Default()
	if err != nil {
		return err
	}
	cfg := e.Config()
	fmt.Printf("colio demo: threads=%d task_size=%d KiB small_read_threshold=%d KiB small_write_threshold=%d KiB\n",
		cfg.Threads, cfg.TaskSize>>10, cfg.SmallReadThreshold>>10, cfg.SmallWriteThreshold>>10)

	in := filepath.Join(dir, "input.bin")
	data := fakes.Pattern(size, 42)
	if err := os.WriteFile(in, data, 0o644); err != nil {
		return err
	}
	want := sha256.Sum256(data)
	fmt.Printf("generated %s (%d MiB, sha256 %x...)\n", in, size>>20, want[:6])

	// 1. Fan-out read of every chunk, one future per range.
	f, err := source.OpenFile(in)
	if err != nil {
		return err
	}
	src := engine.NewSource(f)
	defer src.Close()
	ctx := context.Background()
	var ranges []engine.ReadRange
	for off := 0; off < size; off += chunk {
		ranges = append(ranges, engine.ReadRange{Off: int64(off), Buf: make([]byte, min(chunk, size-off))})
	}
	// Two passes: the first also pays for faulting in fresh buffers, the
	// second is what a reader that reuses its buffers sees.
	var n int64
	var readTime time.Duration
	for pass := 0; pass < 2; pass++ {
		start := time.Now()
		futs, err := e.ReadV(ctx, src, ranges)
		if err != nil {
			return err
		}
		if n, err = waitAll(futs); err != nil {
			return err
		}
		readTime = time.Since(start)
	}
	got := make([]byte, 0, size)
	for _, r := range ranges {
		got = append(got, r.Buf...)
	}
	if sha256.Sum256(got) != want {
		return fmt.Errorf("fan-out read returned wrong bytes")
	}
	fmt.Printf("read   %4d ranges of %4d KiB: %6.0f MB/s  (bytes match; buffers reused)\n", len(ranges), chunk>>10, mbps(n, readTime))

	// 2. Eager appends, reserved in call order, waited in order.
	out := filepath.Join(dir, "output.bin")
	fs, err := sink.OpenFile(out, sink.Create|sink.Truncate, 0)
	if err != nil {
		return err
	}
	snk := engine.NewSink(fs)
	start := time.Now()
	wr := make([]engine.WriteRange, len(ranges))
	for i, r := range ranges {
		wr[i] = engine.WriteRange{Off: engine.Append, Buf: r.Buf}
	}
	wfuts, err := e.WriteV(ctx, snk, wr)
	if err != nil {
		return err
	}
	n, err = waitAll(wfuts)
	if err != nil {
		return err
	}
	if err := snk.Close(); err != nil {
		return err
	}
	writeTime := time.Since(start)
	written, err := os.ReadFile(out)
	if err != nil {
		return err
	}
	if !bytes.Equal(written, data) {
		return fmt.Errorf("appended file differs from the input")
	}
	fmt.Printf("write  %4d appends of %4d KiB: %6.0f MB/s  (file matches)\n", len(ranges), chunk>>10, mbps(n, writeTime))

	// 3. The problem colio exists to solve: 20 reads of 2 MiB from a source
	// with 2 ms latency, fanned out and waited in order.
	const nReads, rsize = 20, 2 << 20
	slow := engine.NewSource(&fakes.SlowSource{Data: data[:nReads*rsize], Latency: 2 * time.Millisecond})
	defer slow.Close()
	lr := make([]engine.ReadRange, nReads)
	for i := range lr {
		lr[i] = engine.ReadRange{Off: int64(i * rsize), Buf: make([]byte, rsize)}
	}
	timeIt := func(deferred bool) (time.Duration, error) {
		e.SetStartAtWait(deferred)
		defer e.SetStartAtWait(false)
		start := time.Now()
		futs, err := e.ReadV(ctx, slow, lr)
		if err != nil {
			return 0, err
		}
		_, err = waitAll(futs)
		return time.Since(start), err
	}
	if _, err := timeIt(false); err != nil { // fault in the buffers
		return err
	}
	eager, err := timeIt(false)
	if err != nil {
		return err
	}
	deferred, err := timeIt(true)
	if err != nil {
		return err
	}
	for i, r := range lr {
		if !bytes.Equal(r.Buf, data[i*rsize:(i+1)*rsize]) {
			return fmt.Errorf("latency read %d differs", i)
		}
	}
	fmt.Printf("2 ms-latency source, %d x 2 MiB: eager %.1f ms, start-at-wait %.1f ms: %.1fx faster\n",
		nReads, ms(eager), ms(deferred), float64(deferred)/float64(eager))
	s := e.Stats()
	fmt.Printf("stats: ops=%d inline=%d tasks=%d read=%d MiB written=%d MiB peak_in_flight=%d errors=%d\n",
		s.OpsSubmitted, s.OpsInline, s.Tasks, s.BytesRead>>20, s.BytesWritten>>20, s.PeakInFlight, s.Errors)
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }
