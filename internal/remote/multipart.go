package remote

import (
	"bytes"
	"context"
	"encoding/xml"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"

	"github.com/colio-dev/colio/internal/errs"
)

// The S3 requests of a sink: CreateMultipartUpload, UploadPart,
// CompleteMultipartUpload, AbortMultipartUpload and the PUT of an object
// that fits in one part. They go through the source's machinery (the
// URL, signer, transport, timeouts, retries with backoff and error
// classification), with bodies signed as UNSIGNED-PAYLOAD: hashing every
// part would cost a core's worth of SHA-256 on the data path, and the
// transport (TLS for real endpoints) already guards the bytes.
const unsignedPayload = "UNSIGNED-PAYLOAD"

// call runs one request with retries and returns a 2xx answer's headers
// and body (up to 1 MiB: S3's write answers are small XML documents).
func (k *Sink) call(ctx context.Context, what, method string, q url.Values, body []byte) (http.Header, []byte, error) {
	for attempt := 1; ; attempt++ {
		h, b, err := k.attempt(ctx, method, q, body)
		if err == nil {
			return h, b, nil
		}
		if attempt >= k.src.opt.Retries || !retryable(err) || !k.src.backoff(ctx, attempt, err) {
			return nil, nil, classify(what+" "+k.src.shown, attempt, err)
		}
	}
}

func (k *Sink) attempt(ctx context.Context, method string, q url.Values, body []byte) (http.Header, []byte, error) {
	actx, cancel := k.src.attemptCtx(ctx)
	defer cancel()
	req, err := k.src.request(actx, method)
	if err != nil {
		return nil, nil, err
	}
	req.URL.RawQuery = q.Encode()
	if body != nil {
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		req.ContentLength = int64(len(body))
		req.Header.Set("X-Amz-Content-Sha256", unsignedPayload)
	}
	if k.src.sign != nil {
		if err := k.src.sign(actx, req); err != nil {
			return nil, nil, err
		}
	} else {
		k.src.s3Headers(actx, req)
	}
	resp, err := k.src.client.Do(req)
	if err != nil {
		return nil, nil, causeOf(actx, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return nil, nil, readHTTPError(resp)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, nil, causeOf(actx, err)
	}
	// CompleteMultipartUpload may answer 200 and then an error, once it
	// has kept the connection alive through a long assembly.
	if bytes.Contains(b, []byte("<Error>")) {
		he := readHTTPError(&http.Response{StatusCode: resp.StatusCode, Header: resp.Header, Body: io.NopCloser(bytes.NewReader(b))})
		if he.Code == "" {
			he.Code = "InternalError"
		}
		return nil, nil, he
	}
	return resp.Header, b, nil
}

func (k *Sink) createUpload(ctx context.Context) (string, error) {
	_, b, err := k.call(ctx, "CreateMultipartUpload", http.MethodPost, url.Values{"uploads": {""}}, nil)
	if err != nil {
		return "", err
	}
	var x struct {
		UploadID string `xml:"UploadId"`
	}
	if xml.Unmarshal(b, &x) != nil || x.UploadID == "" {
		return "", classify("CreateMultipartUpload "+k.src.shown, 1, &protocolError{"the answer holds no UploadId"})
	}
	return x.UploadID, nil
}

func (k *Sink) uploadPart(ctx context.Context, id string, n int, p []byte) (string, error) {
	q := url.Values{"partNumber": {strconv.Itoa(n)}, "uploadId": {id}}
	h, _, err := k.call(ctx, "UploadPart "+strconv.Itoa(n)+" of", http.MethodPut, q, p)
	if err != nil {
		return "", err
	}
	etag := h.Get("ETag")
	if etag == "" {
		return "", classify("UploadPart "+strconv.Itoa(n)+" of "+k.src.shown, 1, &protocolError{"the answer has no ETag"})
	}
	return etag, nil
}

type completePart struct {
	PartNumber int    `xml:"PartNumber"`
	ETag       string `xml:"ETag"`
}

func (k *Sink) completeUpload(ctx context.Context, id string, etags map[int64]string) error {
	x := struct {
		XMLName xml.Name       `xml:"CompleteMultipartUpload"`
		Parts   []completePart `xml:"Part"`
	}{}
	for i, e := range etags {
		x.Parts = append(x.Parts, completePart{PartNumber: int(i) + 1, ETag: e})
	}
	sort.Slice(x.Parts, func(a, b int) bool { return x.Parts[a].PartNumber < x.Parts[b].PartNumber })
	body, _ := xml.Marshal(x)
	_, _, err := k.call(ctx, "CompleteMultipartUpload", http.MethodPost, url.Values{"uploadId": {id}}, body)
	return err
}

// abortUpload ends the upload. S3 may keep parts that were still arriving
// when it answered, so it is sent once every upload of the sink ended.
func (k *Sink) abortUpload(ctx context.Context, id string) error {
	_, _, err := k.call(ctx, "AbortMultipartUpload", http.MethodDelete, url.Values{"uploadId": {id}}, nil)
	if errs.KindOf(err) == errs.NotFound {
		return nil // NoSuchUpload: already gone
	}
	return err
}

func (k *Sink) putObject(ctx context.Context, p []byte) error {
	if p == nil {
		p = []byte{}
	}
	_, _, err := k.call(ctx, "PUT", http.MethodPut, url.Values{}, p)
	return err
}
