// Command remotefloor is the floor that bench/remote.py measures colio's
// remote reads against: a plain net/http client, one goroutine per range,
// each response body read straight into its slice of one buffer, with a
// keep-alive pool as large as the fan-out. No retries, no checks beyond
// the status and the length: what any Go program could do, so colio's
// engine has nothing to hide behind. Each timed run reads into a new
// buffer, as colio's read_ranges and the Python peers return new memory.
//
// It reads a JSON job on stdin and prints JSON on stdout:
//
//	{"url": "http://127.0.0.1:PORT/bucket/key", "ranges": [[off, len], ...], "repeat": 5}
//	-> {"seconds": [...], "sha256": "<hex of the ranges' bytes, concatenated>"}
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"time"
)

type job struct {
	URL    string     `json:"url"`
	Ranges [][2]int64 `json:"ranges"`
	Repeat int        `json:"repeat"`
}

func die(err error) {
	fmt.Fprintln(os.Stderr, "remotefloor:", err)
	os.Exit(1)
}

func get(c *http.Client, url string, off int64, dst []byte) error {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", off, off+int64(len(dst))-1))
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusPartialContent {
		return fmt.Errorf("%s: HTTP %d for a range at %d", url, resp.StatusCode, off)
	}
	_, err = io.ReadFull(resp.Body, dst)
	return err
}

func run(c *http.Client, j job, buf []byte, at []int64) error {
	var wg sync.WaitGroup
	errs := make([]error, len(j.Ranges))
	for i, r := range j.Ranges {
		wg.Add(1)
		go func(i int, off int64, dst []byte) {
			defer wg.Done()
			errs[i] = get(c, j.URL, off, dst)
		}(i, r[0], buf[at[i]:at[i]+r[1]])
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func main() {
	var j job
	if err := json.NewDecoder(os.Stdin).Decode(&j); err != nil {
		die(err)
	}
	at := make([]int64, len(j.Ranges))
	var total int64
	for i, r := range j.Ranges {
		at[i] = total
		total += r[1]
	}
	buf := make([]byte, total)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = len(j.Ranges) + 1
	tr.MaxIdleConnsPerHost = len(j.Ranges) + 1
	c := &http.Client{Transport: tr}
	if err := run(c, j, buf, at); err != nil { // warms the pool; checked below
		die(err)
	}
	sum := sha256.Sum256(buf)
	out := struct {
		Seconds []float64 `json:"seconds"`
		SHA256  string    `json:"sha256"`
	}{SHA256: hex.EncodeToString(sum[:])}
	for k := 0; k < j.Repeat; k++ {
		t0 := time.Now()
		// A new buffer each run, as read_ranges and every peer hand back new
		// memory: its page faults are part of the work.
		buf = make([]byte, total)
		if err := run(c, j, buf, at); err != nil {
			die(err)
		}
		out.Seconds = append(out.Seconds, time.Since(t0).Seconds())
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		die(err)
	}
}
