package remotetest

import (
	"context"
	"encoding/xml"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// s3Codes are the S3 errors the server can answer, with their statuses.
var s3Codes = map[string]int{
	"NoSuchKey":             http.StatusNotFound,
	"NoSuchBucket":          http.StatusNotFound,
	"AccessDenied":          http.StatusForbidden,
	"SignatureDoesNotMatch": http.StatusForbidden,
	"InvalidAccessKeyId":    http.StatusForbidden,
	"ExpiredToken":          http.StatusBadRequest,
	"SlowDown":              http.StatusServiceUnavailable,
	"InternalError":         http.StatusInternalServerError,
}

type s3ErrorBody struct {
	XMLName   xml.Name `xml:"Error"`
	Code      string   `xml:"Code"`
	Message   string   `xml:"Message"`
	Resource  string   `xml:"Resource"`
	RequestID string   `xml:"RequestId"`
}

// s3Error answers status with S3's XML error body (no body for HEAD, as S3
// does). Plain HTTP clients just see the status.
func s3Error(w http.ResponseWriter, r *http.Request, status int, code, msg, resource string) {
	b, _ := xml.Marshal(s3ErrorBody{Code: code, Message: msg, Resource: resource, RequestID: "remotetest"})
	w.Header().Set("Content-Type", "application/xml")
	w.Header().Set("x-amz-request-id", "remotetest")
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		w.Write([]byte(xml.Header))
		w.Write(b)
	}
}

// authorised checks a signed request with the SDK's own signer: the
// request is signed again from the headers it says it signed, at the time
// it says, and the signatures must match. It answers the request itself
// when they do not.
func (s *Server) authorised(w http.ResponseWriter, r *http.Request, p string) bool {
	if s.opt.Key == "" {
		return true
	}
	auth := r.Header.Get("Authorization")
	if auth == "" {
		if s.opt.RequireAuth {
			s3Error(w, r, http.StatusForbidden, "AccessDenied", "Access Denied", p)
			return false
		}
		return true
	}
	cred, signed, sig, ok := parseAuth(auth)
	parts := strings.Split(cred, "/")
	if !ok || len(parts) != 5 {
		s3Error(w, r, http.StatusBadRequest, "AuthorizationHeaderMalformed", "The authorization header is malformed", p)
		return false
	}
	if parts[0] != s.opt.Key {
		s3Error(w, r, http.StatusForbidden, "InvalidAccessKeyId",
			"The AWS Access Key Id you provided does not exist in our records.", p)
		return false
	}
	if parts[2] != s.opt.Region {
		s3Error(w, r, http.StatusBadRequest, "AuthorizationHeaderMalformed",
			"the region '"+parts[2]+"' is wrong; expecting '"+s.opt.Region+"'", p)
		return false
	}
	when, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		s3Error(w, r, http.StatusForbidden, "AccessDenied", "bad or missing X-Amz-Date", p)
		return false
	}
	again, _ := http.NewRequest(r.Method, "http://"+r.Host+r.RequestURI, nil)
	again.Host = r.Host
	again.ContentLength = r.ContentLength // the signer signs the length it finds here, not the header
	for _, h := range strings.Split(signed, ";") {
		if h != "host" {
			again.Header[http.CanonicalHeaderKey(h)] = r.Header.Values(h)
		}
	}
	creds := aws.Credentials{AccessKeyID: s.opt.Key, SecretAccessKey: s.opt.Secret,
		SessionToken: r.Header.Get("X-Amz-Security-Token")}
	err = s.verifier().SignHTTP(
		context.Background(), creds, again, r.Header.Get("X-Amz-Content-Sha256"), "s3", parts[2], when)
	if _, _, want, _ := parseAuth(again.Header.Get("Authorization")); err != nil || want != sig {
		s3Error(w, r, http.StatusForbidden, "SignatureDoesNotMatch",
			"The request signature we calculated does not match the signature you provided.", p)
		return false
	}
	return true
}

// verifier is the server's one signer: the SDK's signer caches the signing
// key it derives per day and region, so reusing it spares every request
// four HMACs and their allocations, which a signer per request paid and
// which the benchmark's clients then shared the CPU with.
func (s *Server) verifier() *v4.Signer {
	s.signerOnce.Do(func() {
		s.signer = v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true })
	})
	return s.signer
}

// parseAuth splits "AWS4-HMAC-SHA256 Credential=..., SignedHeaders=...,
// Signature=...".
func parseAuth(v string) (cred, signed, sig string, ok bool) {
	rest, found := strings.CutPrefix(v, "AWS4-HMAC-SHA256 ")
	if !found {
		return "", "", "", false
	}
	for _, kv := range strings.Split(rest, ",") {
		k, val, _ := strings.Cut(strings.TrimSpace(kv), "=")
		switch k {
		case "Credential":
			cred = val
		case "SignedHeaders":
			signed = val
		case "Signature":
			sig = val
		}
	}
	return cred, signed, sig, cred != "" && signed != "" && sig != ""
}
