package remote

import (
	"bytes"
	"context"
	"strings"
	"syscall"
	"testing"

	"github.com/colio-dev/colio/internal/errs"
	"github.com/colio-dev/colio/internal/remote/remotetest"
)

// isolateAWS keeps the developer's AWS settings out of the tests: no
// shared files, no instance metadata, no region.
func isolateAWS(t *testing.T) {
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
		"AWS_DEFAULT_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3",
		"AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN"} {
		t.Setenv(k, "")
	}
	t.Setenv("AWS_CONFIG_FILE", "/nonexistent/colio-test")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/colio-test")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
}

func (f *fixture) openS3(t *testing.T, key string, kvs ...string) (*Source, error) {
	t.Helper()
	o, err := ParseOptions(append([]string{"endpoint_url=" + f.srv.URL}, kvs...), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	return Open(context.Background(), "s3://"+key, o)
}

// Signed requests are verified by the server with the SDK's signer, in the
// region the client found from the bucket (the server refuses another).
func TestS3SignedReads(t *testing.T) {
	isolateAWS(t)
	f := start(t, remotetest.Options{Key: "AKIDTEST", Secret: "s3cr3t", RequireAuth: true, Region: "eu-west-3"})
	src, err := f.openS3(t, "bkt/obj", "key=AKIDTEST", "secret=s3cr3t", "requester_pays=1")
	if err != nil {
		t.Fatal(err)
	}
	got, err := readAll(t, src, 4096, 100000)
	if err != nil || !bytes.Equal(got, f.data[4096:104096]) {
		t.Fatalf("signed read: %d bytes, %v", len(got), err)
	}
	// With a session token too (sent, and signed).
	src, err = f.openS3(t, "bkt/obj", "key=AKIDTEST", "secret=s3cr3t", "token=tok", "region=eu-west-3")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := readAll(t, src, 0, 10); err != nil || !bytes.Equal(got, f.data[:10]) {
		t.Fatalf("read with token: %v", err)
	}
	// From the environment, as the default chain finds them.
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "s3cr3t")
	src, err = f.openS3(t, "bkt/obj")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := readAll(t, src, 7, 10); err != nil || !bytes.Equal(got, f.data[7:17]) {
		t.Fatalf("read with environment credentials: %v", err)
	}
}

func TestS3Refusals(t *testing.T) {
	isolateAWS(t)
	f := start(t, remotetest.Options{Key: "AKIDTEST", Secret: "s3cr3t", RequireAuth: true})
	_, err := f.openS3(t, "bkt/obj", "key=AKIDTEST", "secret=wrong-secret")
	wantErr(t, err, errs.IO, syscall.EACCES, "SignatureDoesNotMatch", "HTTP 403", "s3://bkt/obj")
	if strings.Contains(err.Error(), "wrong-secret") {
		t.Fatalf("the secret is in the message: %v", err)
	}
	_, err = f.openS3(t, "bkt/obj", "key=NOSUCHKEY", "secret=s3cr3t")
	wantErr(t, err, errs.IO, syscall.EACCES, "InvalidAccessKeyId")
	_, err = f.openS3(t, "bkt/missing", "key=AKIDTEST", "secret=s3cr3t")
	wantErr(t, err, errs.NotFound, syscall.ENOENT, "NoSuchKey", "s3://bkt/missing")
	_, err = f.openS3(t, "nobkt/obj", "key=AKIDTEST", "secret=s3cr3t")
	wantErr(t, err, errs.NotFound, syscall.ENOENT, "NoSuchBucket")
	_, err = f.openS3(t, "bkt/obj", "anon=1")
	wantErr(t, err, errs.IO, syscall.EACCES, "AccessDenied")
	_, err = f.openS3(t, "bkt/obj")
	wantErr(t, err, errs.IO, syscall.EACCES, "no AWS credentials")
	_, err = f.openS3(t, "bkt")
	wantErr(t, err, errs.Invalid, 0, "s3://bucket/key")
}

func TestS3Anonymous(t *testing.T) {
	isolateAWS(t)
	f := start(t, remotetest.Options{Key: "AKIDTEST", Secret: "s3cr3t"}) // a public bucket
	src, err := f.openS3(t, "bkt/obj", "anon=1")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := readAll(t, src, objSize-5, 5); err != nil || !bytes.Equal(got, f.data[objSize-5:]) {
		t.Fatalf("anonymous read: %v", err)
	}
}

func TestS3Escape(t *testing.T) {
	if got := s3Escape("a b/c+d=é~"); got != "a%20b/c%2Bd%3D%C3%A9~" {
		t.Fatalf("s3Escape: %q", got)
	}
}
