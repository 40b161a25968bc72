package remote

import (
	"fmt"
	"math"
	"net/http"
	"net/textproto"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/colio-dev/colio/internal/errs"
)

// Defaults. DefaultMaxInFlight comes from the sweep in doc.go; the rest
// are the usual object-store client values (botocore, obstore).
const (
	DefaultMaxInFlight      = 256
	DefaultRequestSize      = 8 << 20
	DefaultRetries          = 5
	DefaultConnectTimeout   = 10 * time.Second
	DefaultFirstByteTimeout = 30 * time.Second
	DefaultIdleTimeout      = 30 * time.Second
	DefaultRequestTimeout   = 300 * time.Second

	// MaxInFlight bounds max_in_flight: each request in flight is a
	// goroutine and a connection, and a stray huge value should not open
	// thousands of sockets.
	MaxInFlight = 4096
)

// Options configure a remote source. Zero values are not defaults: use
// ParseOptions, which starts from the environment.
type Options struct {
	MaxInFlight      int
	RequestSize      int64
	Retries          int // attempts per request, the first included
	ConnectTimeout   time.Duration
	FirstByteTimeout time.Duration
	IdleTimeout      time.Duration
	RequestTimeout   time.Duration
	CABundle         string
	Size             int64  // -1: ask the server
	ETag             string // "": none expected; else the object must have this ETag (open and every GET)
	Prefetch         int64  // > 0: the open GETs and keeps this many first bytes (prefetch.go)
	PrefetchTail     int64  // > 0: the open GETs and keeps this many last bytes (prefetch.go)
	Header           http.Header

	// S3 only.
	Key, Secret, Token string
	Profile            string
	Anon               bool
	EndpointURL        string
	Region             string
	PathStyle          int // -1: default (1 with EndpointURL)
	RequesterPays      bool

	// S3 sinks only (sink.go).
	PartSize, BufferSize int64

	// s3Set records which S3-only keys were given, to refuse them on
	// http(s) URLs.
	s3Set []string
}

// option describes one key: its environment variable and how it is set.
type option struct {
	env string
	s3  bool
	set func(o *Options, v string) error
}

var options = map[string]option{
	"max_in_flight": {env: "COLIO_REMOTE_MAX_IN_FLIGHT", set: func(o *Options, v string) error {
		n, err := intIn(v, 1, MaxInFlight)
		o.MaxInFlight = int(n)
		return err
	}},
	"request_size": {env: "COLIO_REMOTE_REQUEST_SIZE", set: func(o *Options, v string) error {
		n, err := intIn(v, 1, math.MaxInt64)
		o.RequestSize = n
		return err
	}},
	"retries": {env: "COLIO_REMOTE_RETRIES", set: func(o *Options, v string) error {
		n, err := intIn(v, 1, 100)
		o.Retries = int(n)
		return err
	}},
	"connect_timeout":    {env: "COLIO_REMOTE_CONNECT_TIMEOUT", set: seconds(func(o *Options) *time.Duration { return &o.ConnectTimeout })},
	"first_byte_timeout": {env: "COLIO_REMOTE_FIRST_BYTE_TIMEOUT", set: seconds(func(o *Options) *time.Duration { return &o.FirstByteTimeout })},
	"idle_timeout":       {env: "COLIO_REMOTE_IDLE_TIMEOUT", set: seconds(func(o *Options) *time.Duration { return &o.IdleTimeout })},
	"request_timeout":    {env: "COLIO_REMOTE_REQUEST_TIMEOUT", set: seconds(func(o *Options) *time.Duration { return &o.RequestTimeout })},
	"ca_bundle": {env: "COLIO_CA_BUNDLE", set: func(o *Options, v string) error {
		o.CABundle = v
		return nil
	}},
	"prefetch": {env: "COLIO_REMOTE_PREFETCH", set: func(o *Options, v string) error {
		n, err := intIn(v, 0, MaxPrefetch)
		o.Prefetch = n
		return err
	}},
	"prefetch_tail": {env: "COLIO_REMOTE_PREFETCH_TAIL", set: func(o *Options, v string) error {
		n, err := intIn(v, 0, MaxPrefetch)
		o.PrefetchTail = n
		return err
	}},
	"size": {set: func(o *Options, v string) error {
		n, err := intIn(v, 0, math.MaxInt64)
		o.Size = n
		return err
	}},
	"etag": {set: func(o *Options, v string) error {
		if v == "" {
			return fmt.Errorf("an empty ETag")
		}
		o.ETag = v
		return nil
	}},
	"key":     {s3: true, set: func(o *Options, v string) error { o.Key = v; return nil }},
	"secret":  {s3: true, set: func(o *Options, v string) error { o.Secret = v; return nil }},
	"token":   {s3: true, set: func(o *Options, v string) error { o.Token = v; return nil }},
	"profile": {s3: true, set: func(o *Options, v string) error { o.Profile = v; return nil }},
	"anon":    {s3: true, set: func(o *Options, v string) error { return boolean(v, &o.Anon) }},
	"endpoint_url": {s3: true, set: func(o *Options, v string) error {
		if !strings.HasPrefix(v, "http://") && !strings.HasPrefix(v, "https://") {
			return fmt.Errorf("not an http:// or https:// URL")
		}
		o.EndpointURL = strings.TrimRight(v, "/")
		return nil
	}},
	"region": {s3: true, set: func(o *Options, v string) error { o.Region = v; return nil }},
	"path_style": {s3: true, set: func(o *Options, v string) error {
		var b bool
		err := boolean(v, &b)
		o.PathStyle = 0
		if b {
			o.PathStyle = 1
		}
		return err
	}},
	"requester_pays": {s3: true, set: func(o *Options, v string) error { return boolean(v, &o.RequesterPays) }},
}

// secretKeys never have their values in a message.
var secretKeys = map[string]bool{"key": true, "secret": true, "token": true}

// ParseOptions reads "key=value" options over the defaults and the
// environment (env looks a variable up; nil means the process
// environment). An unknown key or a bad value is an Invalid error naming
// it; a bad environment variable names the variable.
func ParseOptions(kvs []string, env func(string) (string, bool)) (Options, error) {
	if env == nil {
		env = os.LookupEnv
	}
	o := Options{
		MaxInFlight: DefaultMaxInFlight, RequestSize: DefaultRequestSize, Retries: DefaultRetries,
		ConnectTimeout: DefaultConnectTimeout, FirstByteTimeout: DefaultFirstByteTimeout,
		IdleTimeout: DefaultIdleTimeout, RequestTimeout: DefaultRequestTimeout,
		Size: -1, PathStyle: -1, Header: http.Header{},
		PartSize: DefaultPartSize, BufferSize: DefaultBufferSize,
	}
	for _, name := range sortedKeys() {
		opt := options[name]
		if opt.env == "" {
			continue
		}
		v, ok := env(opt.env)
		if name == "ca_bundle" && (!ok || v == "") {
			v, ok = env("AWS_CA_BUNDLE")
		}
		if !ok || v == "" {
			continue
		}
		if err := opt.set(&o, v); err != nil {
			return o, errs.New(errs.Invalid, "colio: environment variable %s=%q: %v", opt.env, v, err)
		}
	}
	for _, kv := range kvs {
		k, v, found := strings.Cut(kv, "=")
		if !found {
			return o, errs.New(errs.Invalid, "colio: remote option %q is not key=value", redactKV(kv))
		}
		if name, ok := strings.CutPrefix(k, "header."); ok {
			if name == "" || !validHeaderName(name) {
				return o, errs.New(errs.Invalid, "colio: remote option %q: not a valid HTTP header name", k)
			}
			if strings.ContainsAny(v, "\r\n") {
				return o, errs.New(errs.Invalid, "colio: remote option %q: a header value cannot hold a line break", k)
			}
			o.Header.Add(name, v)
			continue
		}
		opt, ok := options[k]
		if !ok {
			return o, errs.New(errs.Invalid, "colio: unknown remote option %q (known: %s, header.NAME)", k, strings.Join(sortedKeys(), ", "))
		}
		if err := opt.set(&o, v); err != nil {
			shown := v
			if secretKeys[k] {
				shown = "..."
			}
			return o, errs.New(errs.Invalid, "colio: remote option %s=%q: %v", k, shown, err)
		}
		if opt.s3 {
			o.s3Set = append(o.s3Set, k)
		}
	}
	return o, nil
}

func sortedKeys() []string {
	ks := make([]string, 0, len(options))
	for k := range options {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func redactKV(kv string) string {
	if len(kv) > 40 {
		return kv[:40] + "..."
	}
	return kv
}

func validHeaderName(s string) bool {
	for _, c := range s {
		if c <= ' ' || c >= 0x7f || strings.ContainsRune("()<>@,;:\\\"/[]?={}", c) {
			return false
		}
	}
	return textproto.CanonicalMIMEHeaderKey(s) != ""
}

func intIn(v string, lo, hi int64) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("not an integer")
	}
	if n < lo || n > hi {
		return 0, fmt.Errorf("out of range [%d, %d]", lo, hi)
	}
	return n, nil
}

// seconds parses a positive number of seconds, fractions allowed.
func seconds(field func(*Options) *time.Duration) func(*Options, string) error {
	return func(o *Options, v string) error {
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || math.IsNaN(f) {
			return fmt.Errorf("not a number of seconds")
		}
		if f <= 0 || f > 86400*7 {
			return fmt.Errorf("out of range (0, 604800] seconds")
		}
		*field(o) = time.Duration(f * float64(time.Second))
		return nil
	}
}

func boolean(v string, out *bool) error {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "true", "yes", "on":
		*out = true
	case "0", "false", "no", "off", "":
		*out = false
	default:
		return fmt.Errorf("not a boolean (1 or 0)")
	}
	return nil
}
