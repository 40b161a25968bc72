package remote

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/colio-dev/colio/internal/remote/remotetest"
)

// Credentials are fetched once, not per request: a profile whose
// credential_process logs each run serves 200 signed reads with one run
// (config.LoadDefaultConfig wraps every provider of the chain in the SDK's
// CredentialsCache, which openS3's signer asks). The process's log is the
// proof, from outside the source.
func TestS3CredentialsCached(t *testing.T) {
	isolateAWS(t)
	f := start(t, remotetest.Options{Key: "AKIDTEST", Secret: "s3cr3t", RequireAuth: true})
	dir := t.TempDir()
	logf := filepath.Join(dir, "runs")
	script := filepath.Join(dir, "creds.sh")
	body := "#!/bin/sh\necho run >> " + logf + "\n" +
		`echo '{"Version": 1, "AccessKeyId": "AKIDTEST", "SecretAccessKey": "s3cr3t"}'` + "\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "config")
	if err := os.WriteFile(cfg, []byte("[profile counted]\ncredential_process = "+script+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_CONFIG_FILE", cfg)
	src, err := f.openS3(t, "bkt/obj", "profile=counted", "region=us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var wg sync.WaitGroup
	errc := make(chan error, 200)
	for i := 0; i < 200; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			off := int64(i) * 4096
			p := make([]byte, 4096)
			if _, err := src.ReadAt(context.Background(), p, off); err != nil {
				errc <- err
			} else if !bytes.Equal(p, f.data[off:off+4096]) {
				errc <- os.ErrInvalid
			}
		}(i)
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatalf("signed read: %v", err)
	}
	runs, err := os.ReadFile(logf)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(runs), "run"); n != 1 {
		t.Fatalf("credential_process ran %d times for an open and 200 reads; want 1", n)
	}
}
