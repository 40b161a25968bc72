package remote

import (
	"testing"
	"time"
)

// A loaded machine stretches an odd body past its round trip: on loopback
// at 20 ms, one 300 KiB body in 40 fan-outs took 40 ms under two busy
// loops, and its 8 MB/s became the link's rate, the hole fell from 78 KiB
// to 609 bytes and the next fan-out made 60 requests instead of 42. Bodies
// that arrived within the round trip outvote it.
func TestMeterIgnoresAnOddSlowBodyAmongFastOnes(t *testing.T) {
	var s Source
	for i := 0; i < 10; i++ {
		s.meter.record(20*time.Millisecond, 300<<10, 2*time.Millisecond) // fast: bound only
	}
	s.meter.record(20*time.Millisecond, 300<<10, 40*time.Millisecond) // stretched by load
	if _, bps, ok := s.Measured(); !ok || bps != 0 {
		t.Fatalf("rate %.0f B/s, %v; want none believed (1 slow body against 10 fast ones)", bps, ok)
	}
}

// On a link that is really slow, every large body takes longer than the
// round trip, and the rate is believed from the first one on.
func TestMeterBelievesASlowLink(t *testing.T) {
	var s Source
	s.meter.record(5*time.Millisecond, 512<<10, 26*time.Millisecond)
	_, bps, ok := s.Measured()
	if want := float64(512<<10) / 0.026; !ok || bps < want*0.99 || bps > want*1.01 {
		t.Fatalf("rate %.0f B/s, %v; want %.0f", bps, ok, want)
	}
	for i := 0; i < 3; i++ {
		s.meter.record(5*time.Millisecond, 512<<10, 2*time.Millisecond)
	}
	if _, bps, _ := s.Measured(); bps != 0 {
		t.Fatalf("rate %.0f B/s after 3 fast bodies against 1 slow; want none believed", bps)
	}
	for i := 0; i < 5; i++ {
		s.meter.record(5*time.Millisecond, 512<<10, 30*time.Millisecond)
	}
	if _, bps, _ := s.Measured(); bps == 0 {
		t.Fatal("no rate after 6 slow bodies against 3 fast; want the slow link's rate")
	}
}
