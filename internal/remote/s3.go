package remote

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"

	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/colio-dev/colio/internal/errs"
)

// emptySHA256 is the payload hash of a request without a body.
const emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// openS3 resolves s3://bucket/key to an HTTPS URL and a signer: the SDK's
// config loading gives credentials (static keys, profile, environment,
// web identity, instance metadata) and the region; the SDK's SigV4 signer
// signs each attempt. Only those two parts of the SDK are used; the
// requests are the same ranged GETs as for plain HTTP.
func (s *Source) openS3(ctx context.Context, raw string) error {
	o := s.opt
	shown := redactURL(raw)
	rest := raw[len("s3://"):]
	bucket, key, _ := strings.Cut(rest, "/")
	if bucket == "" || key == "" {
		return errs.New(errs.Invalid, "colio: %q is not s3://bucket/key", shown)
	}
	s.shown = "s3://" + bucket + "/" + key
	var lo []func(*config.LoadOptions) error
	if o.Profile != "" {
		lo = append(lo, config.WithSharedConfigProfile(o.Profile))
	}
	if o.Region != "" {
		lo = append(lo, config.WithRegion(o.Region))
	}
	if o.Key != "" || o.Secret != "" {
		if o.Key == "" || o.Secret == "" {
			return errs.New(errs.Invalid, "colio: %s: key= and secret= go together", s.shown)
		}
		lo = append(lo, config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(o.Key, o.Secret, o.Token)))
	}
	cfg, err := config.LoadDefaultConfig(ctx, lo...)
	if err != nil {
		return errs.New(errs.Invalid, "colio: %s: loading the AWS configuration failed: %v", s.shown, err)
	}
	endpoint := o.EndpointURL
	if endpoint == "" && cfg.BaseEndpoint != nil {
		endpoint = strings.TrimRight(*cfg.BaseEndpoint, "/")
	}
	pathStyle := o.PathStyle == 1 || o.PathStyle == -1 && endpoint != "" ||
		endpoint == "" && strings.Contains(bucket, ".") // a dotted bucket breaks the TLS name of virtual hosts
	region := o.Region
	if region == "" {
		region = cfg.Region
	}
	if region == "" {
		region = s.discoverRegion(ctx, endpoint, bucket, pathStyle)
	}
	base := endpoint
	if base == "" {
		base = "https://s3." + region + ".amazonaws.com"
	}
	bu, err := url.Parse(base)
	if err != nil || bu.Host == "" {
		return errs.New(errs.Invalid, "colio: endpoint_url %q is not a valid URL", redactURL(base))
	}
	u := &url.URL{Scheme: bu.Scheme, Host: bu.Host}
	prefix := strings.TrimRight(bu.Path, "/")
	if pathStyle {
		u.Path = prefix + "/" + bucket + "/" + key
		u.RawPath = prefix + "/" + s3Escape(bucket) + "/" + s3Escape(key)
	} else {
		u.Host = bucket + "." + bu.Host
		u.Path = prefix + "/" + key
		u.RawPath = prefix + "/" + s3Escape(key)
	}
	s.target = u
	if o.Anon {
		s.sign = s.s3Headers
		return nil
	}
	creds := cfg.Credentials
	if creds == nil {
		return noCredentials(s.shown, nil)
	}
	// Fail at open, not at the first read, when the chain has nothing.
	if _, err := creds.Retrieve(ctx); err != nil {
		return noCredentials(s.shown, err)
	}
	signer := v4.NewSigner(func(so *v4.SignerOptions) { so.DisableURIPathEscaping = true })
	s.sign = func(ctx context.Context, req *http.Request) error {
		c, err := creds.Retrieve(ctx)
		if err != nil {
			return noCredentials(s.shown, err)
		}
		s.s3Headers(ctx, req)
		// The sink's uploads say UNSIGNED-PAYLOAD in the header; reads
		// have no body.
		return signer.SignHTTP(ctx, c, req, req.Header.Get("X-Amz-Content-Sha256"), "s3", region, time.Now())
	}
	return nil
}

// s3Headers are the headers every S3 request carries, signed or not.
func (s *Source) s3Headers(_ context.Context, req *http.Request) error {
	if req.Header.Get("X-Amz-Content-Sha256") == "" {
		req.Header.Set("X-Amz-Content-Sha256", emptySHA256)
	}
	if s.opt.RequesterPays {
		req.Header.Set("X-Amz-Request-Payer", "requester")
	}
	return nil
}

func noCredentials(shown string, err error) error {
	msg := "colio: " + shown + ": no AWS credentials found (pass key= and secret=, profile=, set AWS_ACCESS_KEY_ID " +
		"and AWS_SECRET_ACCESS_KEY, or anon=1 for a public bucket)"
	if err != nil {
		// The SDK's message names the providers it tried; it holds no secret.
		msg += ": " + clip(err.Error(), 400)
	}
	return &errs.Error{Kind: errs.IO, Errno: syscall.EACCES, Msg: msg}
}

// discoverRegion asks the bucket where it lives: S3 answers a HEAD of the
// bucket with x-amz-bucket-region whatever the status (200, 301, 403), so
// no credentials are needed. Without an answer it is us-east-1, where an
// S3 without regions (MinIO, most test servers) expects to be signed.
func (s *Source) discoverRegion(ctx context.Context, endpoint, bucket string, pathStyle bool) string {
	u := "https://" + bucket + ".s3.amazonaws.com/"
	switch {
	case endpoint != "" && pathStyle:
		u = endpoint + "/" + s3Escape(bucket)
	case endpoint != "":
		if bu, err := url.Parse(endpoint); err == nil {
			u = bu.Scheme + "://" + bucket + "." + bu.Host + "/"
		}
	case pathStyle:
		u = "https://s3.amazonaws.com/" + s3Escape(bucket)
	}
	actx, cancel := s.attemptCtx(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodHead, u, nil)
	if err != nil {
		return "us-east-1"
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return "us-east-1"
	}
	resp.Body.Close()
	if r := resp.Header.Get("X-Amz-Bucket-Region"); r != "" {
		return r
	}
	return "us-east-1"
}

// s3Escape percent-encodes a key as S3's canonical URI wants: every byte
// but the unreserved ones and '/'.
func s3Escape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || strings.IndexByte("-._~/", c) >= 0 {
			b.WriteByte(c)
		} else {
			b.WriteString("%" + strings.ToUpper(string("0123456789abcdef"[c>>4])+string("0123456789abcdef"[c&15])))
		}
	}
	return b.String()
}
