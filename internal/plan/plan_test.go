package plan

import (
	"encoding/binary"
	"math/rand"
	"reflect"
	"testing"
)

func TestPlanTable(t *testing.T) {
	r := func(off, n int64) Range { return Range{off, n} }
	cases := []struct {
		name      string
		in        []Range
		hole, max int64
		merged    []Range
		places    []Place
	}{
		{"empty input", nil, 0, 0, nil, []Place{}},
		{"one", []Range{r(10, 5)}, 0, 0, []Range{r(10, 5)}, []Place{{0, 0}}},
		{"adjacent merge at hole 0", []Range{r(10, 5), r(0, 10)}, 0, 0,
			[]Range{r(0, 15)}, []Place{{0, 10}, {0, 0}}},
		{"gap over hole stays apart", []Range{r(0, 10), r(20, 5)}, 9, 0,
			[]Range{r(0, 10), r(20, 5)}, []Place{{0, 0}, {1, 0}}},
		{"gap at hole merges", []Range{r(0, 10), r(20, 5)}, 10, 0,
			[]Range{r(0, 25)}, []Place{{0, 0}, {0, 20}}},
		{"contained", []Range{r(0, 100), r(10, 5)}, 0, 0,
			[]Range{r(0, 100)}, []Place{{0, 0}, {0, 10}}},
		{"duplicate", []Range{r(7, 3), r(7, 3)}, 0, 0,
			[]Range{r(7, 3)}, []Place{{0, 0}, {0, 0}}},
		{"overlap ignores the cap", []Range{r(0, 10), r(5, 10)}, 0, 4,
			[]Range{r(0, 15)}, []Place{{0, 0}, {0, 5}}},
		{"cap stops a gap merge", []Range{r(0, 10), r(12, 10), r(24, 10)}, 5, 22,
			[]Range{r(0, 22), r(24, 10)}, []Place{{0, 0}, {0, 12}, {1, 0}}},
		{"one range over the cap", []Range{r(0, 50)}, 0, 10, []Range{r(0, 50)}, []Place{{0, 0}}},
		{"empty range inside", []Range{r(0, 10), r(5, 0)}, 0, 0,
			[]Range{r(0, 10)}, []Place{{0, 0}, {0, 5}}},
		{"negative hole is zero", []Range{r(0, 1), r(2, 1)}, -5, 0,
			[]Range{r(0, 1), r(2, 1)}, []Place{{0, 0}, {1, 0}}},
	}
	for _, c := range cases {
		got := Plan(c.in, c.hole, c.max)
		if !reflect.DeepEqual(got.Merged, c.merged) || !reflect.DeepEqual(got.Places, c.places) {
			t.Errorf("%s: Plan(%v, %d, %d) = %v %v, want %v %v", c.name, c.in, c.hole, c.max,
				got.Merged, got.Places, c.merged, c.places)
		}
		check(t, c.in, c.hole, c.max, got)
	}
}

// check asserts the planner's invariants for one plan.
func check(t *testing.T, in []Range, hole, max int64, res Result) {
	t.Helper()
	if len(res.Places) != len(in) {
		t.Fatalf("%d places for %d ranges", len(res.Places), len(in))
	}
	// Requests are sorted and disjoint, and far enough apart: two requests
	// closer than hole would have been merged unless the cap forbade it.
	for i := 1; i < len(res.Merged); i++ {
		a, b := res.Merged[i-1], res.Merged[i]
		if b.Off < a.End() {
			t.Fatalf("requests %v and %v overlap or are out of order", a, b)
		}
		if b.Off-a.End() <= clampHole(hole) && (max <= 0 || b.End()-a.Off <= max) && b.Len > 0 {
			t.Fatalf("requests %v and %v should have merged (hole %d, max %d)", a, b, hole, max)
		}
	}
	// Every input byte lies where its place says, inside its request.
	for i, r := range in {
		p := res.Places[i]
		if p.Req < 0 || p.Req >= len(res.Merged) {
			t.Fatalf("range %d %v: request %d of %d", i, r, p.Req, len(res.Merged))
		}
		m := res.Merged[p.Req]
		if m.Off+p.At != r.Off || p.At < 0 || r.End() > m.End() {
			t.Fatalf("range %d %v placed at %d in %v", i, r, p.At, m)
		}
	}
	// Every request byte is either an input byte or part of a gap of at
	// most hole; a request over the cap holds an input range over the cap
	// or ranges overlapping such ranges, never a merge across a gap.
	for j, m := range res.Merged {
		var mine []Range
		for i, r := range in {
			if res.Places[i].Req == j {
				mine = append(mine, r)
			}
		}
		if len(mine) == 0 {
			t.Fatalf("request %d %v serves no range", j, m)
		}
		covered := coverage(mine)
		if covered[0].Off != m.Off || covered[len(covered)-1].End() != m.End() {
			t.Fatalf("request %v does not start and end with its ranges %v", m, mine)
		}
		for k := 1; k < len(covered); k++ {
			if g := covered[k].Off - covered[k-1].End(); g > clampHole(hole) {
				t.Fatalf("request %v bridges a gap of %d > hole %d", m, g, hole)
			}
		}
		if max > 0 && m.Len > max && len(covered) > 1 {
			t.Fatalf("request %v is over the cap %d and merged across a gap", m, max)
		}
	}
}

// coverage returns the union of rs as sorted, disjoint, non-touching runs.
func coverage(rs []Range) []Range {
	s := append([]Range(nil), rs...)
	for i := 1; i < len(s); i++ { // insertion sort: the lists are short
		for j := i; j > 0 && s[j].Off < s[j-1].Off; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	var out []Range
	for _, r := range s {
		if n := len(out); n > 0 && r.Off <= out[n-1].End() {
			out[n-1].Len = max64(out[n-1].End(), r.End()) - out[n-1].Off
			continue
		}
		out = append(out, r)
	}
	return out
}

// FuzzPlan checks the invariants on arbitrary batches, and that the plan
// does not depend on the order of the input ranges.
func FuzzPlan(f *testing.F) {
	f.Add([]byte{0, 10, 5, 10, 20, 3}, int64(4), int64(0), int64(1))
	f.Add([]byte{1, 1, 1, 1, 0, 0, 200, 50}, int64(0), int64(8), int64(2))
	f.Add([]byte{}, int64(100), int64(100), int64(3))
	f.Fuzz(func(t *testing.T, data []byte, hole, max, seed int64) {
		hole %= 1 << 20
		max %= 1 << 20
		var in []Range
		for len(data) >= 4 && len(in) < 256 {
			off := int64(binary.LittleEndian.Uint16(data))
			n := int64(binary.LittleEndian.Uint16(data[2:])) % 512
			in = append(in, Range{off, n})
			data = data[4:]
		}
		res := Plan(in, hole, max)
		check(t, in, hole, max, res)
		shuffled := make([]Range, len(in))
		perm := rand.New(rand.NewSource(seed)).Perm(len(in))
		for i, p := range perm {
			shuffled[p] = in[i]
		}
		res2 := Plan(shuffled, hole, max)
		if !reflect.DeepEqual(res.Merged, res2.Merged) && !(len(res.Merged) == 0 && len(res2.Merged) == 0) {
			t.Fatalf("order matters: %v vs %v", res.Merged, res2.Merged)
		}
		for i, p := range perm {
			if res.Places[i] != res2.Places[p] {
				t.Fatalf("range %d placed %v, shuffled %v", i, res.Places[i], res2.Places[p])
			}
		}
	})
}
