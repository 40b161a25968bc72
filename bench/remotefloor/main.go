// Command remotefloor is the floor that bench/remote.py measures colio's
// remote reads against: a plain net/http client, one goroutine per range,
// each response body read straight into its slice of one buffer, with a
// keep-alive pool as large as the fan-out. No retries, no checks beyond
// the status and the length: what any Go program could do, so colio's
// engine has nothing to hide behind. Each timed run reads into a new
// buffer, as colio's read_ranges and the Python peers return new memory.
//
// With "s3" in the job, every request is signed as colio's S3 source signs
// its GETs (the SDK's SigV4 signer, one signer reused, static credentials,
// the empty payload's hash), against the same path-style URL: the floor of
// a signed S3 fan-out pays the same signing on the client and the same
// check on the server as colio does, and an unsigned one would not.
//
// It reads a JSON job on stdin and prints JSON on stdout:
//
//	{"url": "http://127.0.0.1:PORT/bucket/key", "ranges": [[off, len], ...], "repeat": 5,
//	 "s3": {"key": "...", "secret": "...", "region": "us-east-1"}}   (s3 optional)
//	-> {"seconds": [...], "sha256": "<hex of the ranges' bytes, concatenated>"}
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// emptySHA256 is the payload hash of a GET, which has no body.
const emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

type job struct {
	URL    string     `json:"url"`
	Ranges [][2]int64 `json:"ranges"`
	Repeat int        `json:"repeat"`
	S3     *struct {
		Key    string `json:"key"`
		Secret string `json:"secret"`
		Region string `json:"region"`
	} `json:"s3"`
}

// signer signs a request in place; nil for plain HTTP.
type signer func(*http.Request) error

func s3Signer(j job) signer {
	if j.S3 == nil {
		return nil
	}
	creds := aws.Credentials{AccessKeyID: j.S3.Key, SecretAccessKey: j.S3.Secret}
	v := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true })
	return func(req *http.Request) error {
		req.Header.Set("X-Amz-Content-Sha256", emptySHA256)
		return v.SignHTTP(context.Background(), creds, req, emptySHA256, "s3", j.S3.Region, time.Now())
	}
}

func die(err error) {
	fmt.Fprintln(os.Stderr, "remotefloor:", err)
	os.Exit(1)
}

func get(c *http.Client, sign signer, url string, off int64, dst []byte) error {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", off, off+int64(len(dst))-1))
	if sign != nil {
		if err := sign(req); err != nil {
			return err
		}
	}
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

func run(c *http.Client, sign signer, j job, buf []byte, at []int64) error {
	var wg sync.WaitGroup
	errs := make([]error, len(j.Ranges))
	for i, r := range j.Ranges {
		wg.Add(1)
		go func(i int, off int64, dst []byte) {
			defer wg.Done()
			errs[i] = get(c, sign, j.URL, off, dst)
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
	sign := s3Signer(j)
	if err := run(c, sign, j, buf, at); err != nil { // warms the pool; checked below
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
		// memory: its page faults are part of the work. Fresh pages from
		// mmap, as the C allocator gives Python's large bytes objects:
		// make would hand back the heap that the last run freed, its pages
		// already faulted in (8,400 faults a run for 256 MiB instead of
		// 65,536 once the heap had grown, measured), a cost that colio and
		// the Python peers pay and the floor would not.
		buf, err := syscall.Mmap(-1, 0, int(max(total, 1)), syscall.PROT_READ|syscall.PROT_WRITE,
			syscall.MAP_ANON|syscall.MAP_PRIVATE)
		if err != nil {
			die(err)
		}
		if err := run(c, sign, j, buf[:total], at); err != nil {
			die(err)
		}
		// Given back inside the timing too: bench/run.py times a method's
		// call with its result dropped, so colio's and the peers' times
		// include freeing what they returned.
		if err := syscall.Munmap(buf); err != nil {
			die(err)
		}
		out.Seconds = append(out.Seconds, time.Since(t0).Seconds())
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		die(err)
	}
}
