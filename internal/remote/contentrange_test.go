package remote

import (
	"fmt"
	"testing"
)

func TestParseContentRange(t *testing.T) {
	good := map[string]contentRange{
		"bytes 0-0/1":     {0, 0, 1},
		"bytes 10-19/100": {10, 19, 100},
		"bytes 5-9/*":     {5, 9, -1},
		"bytes */42":      {-1, -1, 42},
		"bytes */0":       {-1, -1, 0},
	}
	for v, want := range good {
		got, err := parseContentRange(v)
		if err != nil || got != want {
			t.Errorf("%q: got %+v, %v; want %+v", v, got, err, want)
		}
	}
	for _, v := range []string{"", "bytes", "bytes 1-2", "bytes 2-1/10", "bytes 0-10/10", "items 0-1/2",
		"bytes */*", "bytes +1-2/3", "bytes 1- 2/3", "bytes -1-2/3", "bytes 0-1/-3", "bytes 99999999999999999999-1/2"} {
		if cr, err := parseContentRange(v); err == nil {
			t.Errorf("%q: accepted as %+v", v, cr)
		}
	}
}

// FuzzContentRange checks that whatever a server sends, the parser either
// refuses it or returns a range that is consistent and that prints back
// to a header meaning the same bytes.
func FuzzContentRange(f *testing.F) {
	for _, s := range []string{"bytes 0-0/1", "bytes 10-19/100", "bytes */5", "bytes 1-2/*", "bytes 2-1/3", "bytes 0-1/1", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		cr, err := parseContentRange(v)
		if err != nil {
			return
		}
		if cr.First == -1 {
			if cr.Last != -1 || cr.Total < 0 {
				t.Fatalf("%q: unsatisfied form %+v", v, cr)
			}
			return
		}
		if cr.First < 0 || cr.Last < cr.First || (cr.Total >= 0 && cr.Last >= cr.Total) {
			t.Fatalf("%q: inconsistent %+v", v, cr)
		}
		total := "*"
		if cr.Total >= 0 {
			total = fmt.Sprint(cr.Total)
		}
		again := fmt.Sprintf("bytes %d-%d/%s", cr.First, cr.Last, total)
		cr2, err := parseContentRange(again)
		if err != nil || cr2 != cr {
			t.Fatalf("%q -> %+v -> %q -> %+v, %v", v, cr, again, cr2, err)
		}
		// The Range that asks for these bytes, read back by the server
		// side's parser, names the same bytes.
		if cr.Total > 0 {
			h := rangeHeader(cr.First, cr.Last-cr.First+1)
			if h != fmt.Sprintf("bytes=%d-%d", cr.First, cr.Last) {
				t.Fatalf("rangeHeader(%d, %d) = %q", cr.First, cr.Last-cr.First+1, h)
			}
		}
	})
}
