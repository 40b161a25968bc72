package future

import (
	"strings"
	"testing"

	"github.com/colio-dev/colio/internal/errs"
)

// A request split into parts fails as a serial one would: with the error
// of the part at the lowest offset, whichever part reported first (before,
// the first report won, so a split read that hit the end of its source
// early named a different offset from run to run). Cancellation still
// ranks below every other error.
func TestPartErrorAtLowestOffsetWins(t *testing.T) {
	f := New(nil, 4)
	f.PartDoneAt(0, errs.New(errs.IO, "at 300"), 300)
	f.PartDoneAt(0, errs.New(errs.Cancelled, "cancelled at 0"), 0)
	f.PartDoneAt(0, errs.New(errs.IO, "at 100"), 100)
	f.PartDoneAt(50, nil, 200)
	if !f.Done() {
		t.Fatal("not done after every part reported")
	}
	if err := f.Err(); err == nil || !strings.Contains(err.Error(), "at 100") {
		t.Fatalf("err = %v, want the error at offset 100", err)
	}
	if f.N() != 50 {
		t.Fatalf("N = %d, want 50", f.N())
	}

	g := New(nil, 2)
	g.PartDoneAt(0, errs.New(errs.Cancelled, "cancelled at 100"), 100)
	g.PartDoneAt(0, errs.New(errs.Cancelled, "cancelled at 0"), 0)
	if err := g.Err(); errs.KindOf(err) != errs.Cancelled || !strings.Contains(err.Error(), "at 0") {
		t.Fatalf("err = %v, want the cancellation at offset 0", err)
	}
}
