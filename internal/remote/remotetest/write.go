package remotetest

import (
	"crypto/md5"
	"crypto/rand"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// S3 writes, path-style, as an S3 sink makes them: PUT of an object,
// CreateMultipartUpload (POST ?uploads), UploadPart (PUT ?partNumber&
// uploadId), CompleteMultipartUpload (POST ?uploadId), AbortMultipartUpload
// (DELETE ?uploadId), DELETE of an object and ListMultipartUploads (GET
// /bucket?uploads). Parts are kept as files under Dir/.remotetest-uploads;
// an object appears, by rename, only when its upload completes, so a
// reader never sees half of one. Complete checks what S3 checks: known
// parts with their ETags, in ascending order, all but the last at least
// 5 MiB.

const minPart = 5 << 20

type uploads struct {
	mu     sync.Mutex
	open   map[string]*upload // by upload ID
	failed map[string]bool    // "id/part" that failed once (failpart)
}

type upload struct {
	bucket, key string
	parts       map[int]string // part number: ETag
}

func isWrite(r *http.Request) bool {
	q := r.URL.Query()
	switch r.Method {
	case http.MethodPut, http.MethodPost, http.MethodDelete:
		return true
	case http.MethodGet:
		return q.Has("uploads")
	}
	return false
}

func (s *Server) serveWrite(w http.ResponseWriter, r *http.Request, p string, f faults) {
	u := &s.up
	u.mu.Lock()
	if u.open == nil {
		u.open, u.failed = map[string]*upload{}, map[string]bool{}
	}
	u.mu.Unlock()
	clean := path.Clean("/" + p)
	bucket, key, _ := strings.Cut(strings.TrimPrefix(clean, "/"), "/")
	if st, err := os.Stat(filepath.Join(s.opt.Dir, bucket)); bucket == "" || err != nil || !st.IsDir() {
		s3Error(w, r, http.StatusNotFound, "NoSuchBucket", "The specified bucket does not exist", clean)
		return
	}
	q := r.URL.Query()
	id := q.Get("uploadId")
	switch {
	case r.Method == http.MethodGet:
		s.listUploads(w, bucket)
	case key == "":
		s3Error(w, r, http.StatusBadRequest, "InvalidRequest", "a write needs a key", clean)
	case r.Method == http.MethodPost && q.Has("uploads"):
		b := make([]byte, 12)
		rand.Read(b)
		id = hex.EncodeToString(b)
		if err := os.MkdirAll(s.partDir(id), 0o755); err != nil {
			s3Error(w, r, http.StatusInternalServerError, "InternalError", err.Error(), clean)
			return
		}
		u.mu.Lock()
		u.open[id] = &upload{bucket: bucket, key: key, parts: map[int]string{}}
		u.mu.Unlock()
		writeXML(w, struct {
			XMLName  xml.Name `xml:"InitiateMultipartUploadResult"`
			Bucket   string   `xml:"Bucket"`
			Key      string   `xml:"Key"`
			UploadID string   `xml:"UploadId"`
		}{Bucket: bucket, Key: key, UploadID: id})
	case r.Method == http.MethodPut && id != "":
		n, err := strconv.Atoi(q.Get("partNumber"))
		if err != nil || n < 1 || n > 10000 {
			s3Error(w, r, http.StatusBadRequest, "InvalidArgument", "bad partNumber", clean)
			return
		}
		if n == f.rejectPart {
			io.Copy(io.Discard, r.Body)
			s.faults.Add(1)
			s3Error(w, r, http.StatusBadRequest, "InvalidRequest", fmt.Sprintf("injected: part %d refused", n), clean)
			return
		}
		u.mu.Lock()
		up := u.open[id]
		once := n == f.failPart && !u.failed[id+"/"+strconv.Itoa(n)]
		if once {
			u.failed[id+"/"+strconv.Itoa(n)] = true
		}
		u.mu.Unlock()
		if up == nil {
			s3Error(w, r, http.StatusNotFound, "NoSuchUpload", "The specified upload does not exist.", clean)
			return
		}
		if once {
			io.Copy(io.Discard, r.Body)
			s.faults.Add(1)
			s3Error(w, r, http.StatusInternalServerError, "InternalError", fmt.Sprintf("injected: part %d failed once", n), clean)
			return
		}
		etag, err := s.store(filepath.Join(s.partDir(id), strconv.Itoa(n)), r.Body)
		if err != nil {
			s3Error(w, r, http.StatusInternalServerError, "InternalError", err.Error(), clean)
			return
		}
		u.mu.Lock()
		if u.open[id] == up { // not aborted meanwhile
			up.parts[n] = etag
		}
		u.mu.Unlock()
		w.Header().Set("ETag", etag)
		w.WriteHeader(http.StatusOK)
	case r.Method == http.MethodPost && id != "":
		s.complete(w, r, clean, id)
	case r.Method == http.MethodDelete && id != "":
		u.mu.Lock()
		up := u.open[id]
		delete(u.open, id)
		u.mu.Unlock()
		if up == nil {
			s3Error(w, r, http.StatusNotFound, "NoSuchUpload", "The specified upload does not exist.", clean)
			return
		}
		os.RemoveAll(s.partDir(id))
		w.WriteHeader(http.StatusNoContent)
	case r.Method == http.MethodPut:
		name := filepath.Join(s.opt.Dir, filepath.FromSlash(clean))
		os.MkdirAll(filepath.Dir(name), 0o755)
		tmp := filepath.Join(s.partDir(""), "put-"+randHex())
		etag, err := s.store(tmp, r.Body)
		if err == nil {
			err = os.Rename(tmp, name)
		}
		if err != nil {
			s3Error(w, r, http.StatusInternalServerError, "InternalError", err.Error(), clean)
			return
		}
		w.Header().Set("ETag", etag)
		w.WriteHeader(http.StatusOK)
	case r.Method == http.MethodDelete:
		os.Remove(filepath.Join(s.opt.Dir, filepath.FromSlash(clean)))
		w.WriteHeader(http.StatusNoContent)
	default:
		s3Error(w, r, http.StatusMethodNotAllowed, "MethodNotAllowed", "not an S3 write this server knows", clean)
	}
}

func (s *Server) partDir(id string) string {
	d := filepath.Join(s.opt.Dir, ".remotetest-uploads", id)
	os.MkdirAll(d, 0o755)
	return d
}

func randHex() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// store writes body to name and returns its ETag (the MD5, as S3's).
func (s *Server) store(name string, body io.Reader) (string, error) {
	f, err := os.Create(name)
	if err != nil {
		return "", err
	}
	h := md5.New()
	_, err = io.Copy(io.MultiWriter(f, h), body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(name)
		return "", err
	}
	return `"` + hex.EncodeToString(h.Sum(nil)) + `"`, nil
}

func (s *Server) complete(w http.ResponseWriter, r *http.Request, clean, id string) {
	var x struct {
		Parts []struct {
			PartNumber int    `xml:"PartNumber"`
			ETag       string `xml:"ETag"`
		} `xml:"Part"`
	}
	b, _ := io.ReadAll(io.LimitReader(r.Body, 4<<20))
	if err := xml.Unmarshal(b, &x); err != nil || len(x.Parts) == 0 {
		s3Error(w, r, http.StatusBadRequest, "MalformedXML", "The XML you provided was not well-formed", clean)
		return
	}
	s.up.mu.Lock()
	up := s.up.open[id]
	s.up.mu.Unlock()
	if up == nil {
		s3Error(w, r, http.StatusNotFound, "NoSuchUpload", "The specified upload does not exist.", clean)
		return
	}
	dir := s.partDir(id)
	tmp := filepath.Join(s.partDir(""), "complete-"+randHex())
	out, err := os.Create(tmp)
	if err != nil {
		s3Error(w, r, http.StatusInternalServerError, "InternalError", err.Error(), clean)
		return
	}
	defer os.Remove(tmp)
	for i, p := range x.Parts {
		s.up.mu.Lock()
		etag := up.parts[p.PartNumber]
		s.up.mu.Unlock()
		if i > 0 && p.PartNumber <= x.Parts[i-1].PartNumber {
			out.Close()
			s3Error(w, r, http.StatusBadRequest, "InvalidPartOrder", "The list of parts was not in ascending order.", clean)
			return
		}
		if etag == "" || etag != p.ETag {
			out.Close()
			s3Error(w, r, http.StatusBadRequest, "InvalidPart", fmt.Sprintf("part %d: unknown part or wrong ETag", p.PartNumber), clean)
			return
		}
		in, err := os.Open(filepath.Join(dir, strconv.Itoa(p.PartNumber)))
		if err != nil {
			out.Close()
			s3Error(w, r, http.StatusInternalServerError, "InternalError", err.Error(), clean)
			return
		}
		n, _ := io.Copy(out, in)
		in.Close()
		if n < minPart && i < len(x.Parts)-1 {
			out.Close()
			s3Error(w, r, http.StatusBadRequest, "EntityTooSmall",
				"Your proposed upload is smaller than the minimum allowed object size.", clean)
			return
		}
	}
	if err := out.Close(); err != nil {
		s3Error(w, r, http.StatusInternalServerError, "InternalError", err.Error(), clean)
		return
	}
	name := filepath.Join(s.opt.Dir, filepath.FromSlash(clean))
	os.MkdirAll(filepath.Dir(name), 0o755)
	if err := os.Rename(tmp, name); err != nil {
		s3Error(w, r, http.StatusInternalServerError, "InternalError", err.Error(), clean)
		return
	}
	s.up.mu.Lock()
	delete(s.up.open, id)
	s.up.mu.Unlock()
	os.RemoveAll(dir)
	writeXML(w, struct {
		XMLName xml.Name `xml:"CompleteMultipartUploadResult"`
		Key     string   `xml:"Key"`
		ETag    string   `xml:"ETag"`
	}{Key: strings.TrimPrefix(clean, "/"), ETag: `"multipart"`})
}

// OpenUploads lists the multipart uploads not completed nor aborted, as
// "bucket/key", sorted.
func (s *Server) OpenUploads() []string {
	s.up.mu.Lock()
	defer s.up.mu.Unlock()
	var out []string
	for _, up := range s.up.open {
		out = append(out, up.bucket+"/"+up.key)
	}
	sort.Strings(out)
	return out
}

func (s *Server) listUploads(w http.ResponseWriter, bucket string) {
	type item struct {
		Key      string `xml:"Key"`
		UploadID string `xml:"UploadId"`
	}
	res := struct {
		XMLName xml.Name `xml:"ListMultipartUploadsResult"`
		Bucket  string   `xml:"Bucket"`
		Uploads []item   `xml:"Upload"`
	}{Bucket: bucket}
	s.up.mu.Lock()
	for id, up := range s.up.open {
		if up.bucket == bucket {
			res.Uploads = append(res.Uploads, item{Key: up.key, UploadID: id})
		}
	}
	s.up.mu.Unlock()
	writeXML(w, res)
}

func writeXML(w http.ResponseWriter, v any) {
	b, _ := xml.Marshal(v)
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(http.StatusOK)
	w.Write([]byte(xml.Header))
	w.Write(b)
}

// Dir is the directory served: objects written through S3 land there.
func (s *Server) Dir() string { return s.opt.Dir }
