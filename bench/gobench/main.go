// Command gobench measures what only Go can reach and prints JSON for
// bench/run.py: the engine against itself switched to start each read only
// when it is waited on (engine.SetStartAtWait, the deferred bug that cuDF
// PR 23231 fixed), and the inline-vs-pool crossover by request size.
//
// The start-at-wait switch stays a Go-only test hook on purpose: it models
// a bug, so it has no place in the C ABI or in the environment variables a
// user can set, and comparing the two modes of one engine over one Go
// source isolates eagerness from every cost of the Python bindings.
//
//	gobench fanout -n 20 -size 2097152 -latency 0,100us,500us,2ms -repeat 7
//	gobench crossover -repeat 20
//
// Every sample is one run; the sides of a comparison run alternately, so a
// change of machine load hits both. -cpuprofile writes a pprof profile.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/colio-dev/colio/internal/config"
	"github.com/colio-dev/colio/internal/engine"
	"github.com/colio-dev/colio/internal/fakes"
	"github.com/colio-dev/colio/internal/future"
	"github.com/colio-dev/colio/internal/sink"
	"github.com/colio-dev/colio/internal/source"
)

func die(err error) {
	fmt.Fprintln(os.Stderr, "gobench:", err)
	os.Exit(1)
}

func waitAll(futs []*future.Future) {
	for _, f := range futs {
		if _, err := f.WaitTimeout(time.Minute); err != nil {
			die(err)
		}
	}
}

func seconds(d time.Duration) float64 { return d.Seconds() }

type fanoutCase struct {
	Latency   float64   `json:"latency"`
	Eager     []float64 `json:"eager"`
	Deferred  []float64 `json:"deferred"`
	Copy      []float64 `json:"copy"`
	PeakEager int64     `json:"peak_in_flight_eager"`
}

func fanout(args []string) any {
	fl := flag.NewFlagSet("fanout", flag.ExitOnError)
	n := fl.Int("n", 20, "reads")
	size := fl.Int("size", 2<<20, "bytes per read")
	threads := fl.Int("threads", 8, "colio threads")
	lats := fl.String("latency", "0,100us,500us,2ms", "latencies per read")
	repeat := fl.Int("repeat", 7, "samples per side")
	prof := fl.String("cpuprofile", "", "write a CPU profile (eager runs only)")
	fl.Parse(args)

	data := fakes.Pattern(*n**size, 1)
	var out []fanoutCase
	for _, ls := range strings.Split(*lats, ",") {
		lat, err := time.ParseDuration(ls)
		if err != nil {
			die(err)
		}
		cfg := config.Default()
		cfg.Threads = *threads
		eager, deferred := engine.New(cfg), engine.New(cfg)
		deferred.SetStartAtWait(true)
		slow := &fakes.SlowSource{Data: data, Latency: lat}
		src := engine.NewSource(slow)
		ranges := make([]engine.ReadRange, *n)
		for i := range ranges {
			ranges[i] = engine.ReadRange{Off: int64(i * *size), Buf: make([]byte, *size)}
		}
		once := func(e *engine.Engine) time.Duration {
			start := time.Now()
			futs, err := e.ReadV(context.Background(), src, ranges)
			if err != nil {
				die(err)
			}
			waitAll(futs)
			return time.Since(start)
		}
		once(eager) // warm up both
		once(deferred)
		c := fanoutCase{Latency: lat.Seconds()}
		for i := 0; i < *repeat; i++ {
			if i%2 == 0 {
				c.Eager = append(c.Eager, seconds(once(eager)))
				c.Deferred = append(c.Deferred, seconds(once(deferred)))
			} else {
				c.Deferred = append(c.Deferred, seconds(once(deferred)))
				c.Eager = append(c.Eager, seconds(once(eager)))
			}
			start := time.Now()
			for _, r := range ranges {
				copy(r.Buf, data[r.Off:])
			}
			c.Copy = append(c.Copy, seconds(time.Since(start)))
		}
		if *prof != "" && lat == 0 {
			f, err := os.Create(*prof)
			if err != nil {
				die(err)
			}
			pprof.StartCPUProfile(f)
			for end := time.Now().Add(3 * time.Second); time.Now().Before(end); {
				once(eager)
			}
			pprof.StopCPUProfile()
			f.Close()
		}
		before := slow.Gauge.Peak()
		once(eager)
		c.PeakEager = max(before, slow.Gauge.Peak())
		out = append(out, c)
	}
	return map[string]any{"n": *n, "size": *size, "threads": *threads, "cases": out}
}

type crossCase struct {
	Op      string    `json:"op"`
	Pattern string    `json:"pattern"`
	Size    int       `json:"size"`
	Inline  []float64 `json:"inline_us_per_op"`
	Pool    []float64 `json:"pool_us_per_op"`
}

// crossover: the BenchmarkCrossover of internal/engine as a program. For
// each size, 64 requests on a warm local file, either one at a time (sync:
// submit, wait, next) or all submitted then all waited (fanout), through an
// engine that inlines everything and one that inlines nothing.
func crossover(args []string) any {
	fl := flag.NewFlagSet("crossover", flag.ExitOnError)
	repeat := fl.Int("repeat", 20, "samples per side")
	inner := fl.Int("inner", 5, "runs of 64 requests per sample")
	sizesFlag := fl.String("sizes", "4096,16384,32768,65536,131072,262144,1048576", "request sizes")
	prof := fl.String("cpuprofile", "", "write a CPU profile of the 4 KiB sync reads, both sides")
	fl.Parse(args)
	const count = 64
	var sizes []int
	for _, s := range strings.Split(*sizesFlag, ",") {
		var v int
		fmt.Sscan(s, &v)
		sizes = append(sizes, v)
	}
	dir, err := os.MkdirTemp("", "colio-gobench-")
	if err != nil {
		die(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "r.bin")
	if err := os.WriteFile(path, fakes.Pattern(count*(1<<20), 2), 0o644); err != nil {
		die(err)
	}
	inlineCfg, poolCfg := config.Default(), config.Default()
	inlineCfg.SmallReadThreshold, inlineCfg.SmallWriteThreshold = 1<<40, 1<<40
	poolCfg.SmallReadThreshold, poolCfg.SmallWriteThreshold = 0, 0
	inline, pooled := engine.New(inlineCfg), engine.New(poolCfg)
	f, err := source.OpenFile(path)
	if err != nil {
		die(err)
	}
	src := engine.NewSource(f)
	defer src.Close()
	fs, err := sink.OpenFile(filepath.Join(dir, "w.bin"), sink.Create|sink.Truncate, 0)
	if err != nil {
		die(err)
	}
	snk := engine.NewSink(fs)
	defer snk.Close()

	var out []crossCase
	for _, op := range []string{"read", "write"} {
		for _, pattern := range []string{"sync", "fanout"} {
			for _, size := range sizes {
				bufs := make([][]byte, count)
				for i := range bufs {
					bufs[i] = make([]byte, size)
				}
				run := func(e *engine.Engine) float64 {
					start := time.Now()
					for k := 0; k < *inner; k++ {
						var futs []*future.Future
						for i, buf := range bufs {
							var f *future.Future
							var err error
							if op == "read" {
								f, err = e.Read(context.Background(), src, buf, int64(i*size))
							} else {
								f, err = e.Write(context.Background(), snk, buf, int64(i*size))
							}
							if err != nil {
								die(err)
							}
							if pattern == "sync" {
								waitAll([]*future.Future{f})
							} else {
								futs = append(futs, f)
							}
						}
						waitAll(futs)
					}
					return float64(time.Since(start).Nanoseconds()) / 1e3 / float64(*inner*count)
				}
				run(inline)
				run(pooled)
				c := crossCase{Op: op, Pattern: pattern, Size: size}
				for i := 0; i < *repeat; i++ {
					if i%2 == 0 {
						c.Inline = append(c.Inline, run(inline))
						c.Pool = append(c.Pool, run(pooled))
					} else {
						c.Pool = append(c.Pool, run(pooled))
						c.Inline = append(c.Inline, run(inline))
					}
				}
				out = append(out, c)
				if *prof != "" && op == "read" && pattern == "sync" && size == sizes[0] {
					pf, err := os.Create(*prof)
					if err != nil {
						die(err)
					}
					pprof.StartCPUProfile(pf)
					for end := time.Now().Add(3 * time.Second); time.Now().Before(end); {
						run(inline)
						run(pooled)
					}
					pprof.StopCPUProfile()
					pf.Close()
				}
			}
		}
	}
	d := config.Default()
	return map[string]any{
		"count": count, "inner": *inner, "cases": out,
		"default_small_read_threshold":  d.SmallReadThreshold,
		"default_small_write_threshold": d.SmallWriteThreshold,
	}
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: gobench fanout|crossover [flags]")
		os.Exit(2)
	}
	var res any
	switch os.Args[1] {
	case "fanout":
		res = fanout(os.Args[2:])
	case "crossover":
		res = crossover(os.Args[2:])
	default:
		fmt.Fprintln(os.Stderr, "gobench: unknown command", os.Args[1])
		os.Exit(2)
	}
	enc := json.NewEncoder(os.Stdout)
	if err := enc.Encode(res); err != nil {
		die(err)
	}
}
