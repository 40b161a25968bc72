package main

import (
	"fmt"
	"sync"
)

// Handles are the colio_source*, colio_sink* and colio_future* values C
// sees. They are not pointers: a Go pointer must not be kept by C (the
// collector may not know of it, and a freed object's memory would be
// reused), and a dangling pointer cannot be checked. A handle is a token
// made of a slot index, the slot's generation and the handle's kind:
//
//	bit  63     0
//	bits 60..62 kind (1 source, 2 sink, 3 future, 4 stream, 5 cq)
//	bits 28..59 generation of the slot (32 bits, never 0)
//	bits  0..27 slot index (up to 268 million live handles)
//
// A token is valid while its slot holds an object of its kind with its
// generation. Freeing bumps the generation, so a freed or stale token no
// longer matches; a forged one almost never does (its index must be in
// range and its 32-bit generation exact). Checking touches only the table,
// never the freed object. The kind bits make a source token passed as a
// sink fail, and keep every token non-zero (0 is NULL).
type kind uint8

const (
	kindSource kind = 1
	kindSink   kind = 2
	kindFuture kind = 3
	kindStream kind = 4
	kindCQ     kind = 5 // colio_cq (batch.go)
)

func (k kind) String() string {
	switch k {
	case kindSource:
		return "colio_source"
	case kindSink:
		return "colio_sink"
	case kindFuture:
		return "colio_future"
	case kindStream:
		return "colio_stream"
	case kindCQ:
		return "colio_cq"
	}
	return "unknown"
}

const (
	indexBits = 28
	genBits   = 32
	kindShift = indexBits + genBits
	maxSlots  = 1 << indexBits
	indexMask = maxSlots - 1
	genMask   = 1<<genBits - 1
)

type token uint64

func makeToken(k kind, gen uint32, index uint32) token {
	return token(uint64(k)<<kindShift | uint64(gen)<<indexBits | uint64(index))
}

func (t token) parts() (k kind, gen uint32, index uint32) {
	return kind(t >> kindShift), uint32(t >> indexBits & genMask), uint32(t & indexMask)
}

type slot struct {
	gen  uint32 // current generation; a token must match it
	kind kind   // 0 when free
	obj  any
}

// table maps tokens to objects. Lookups take a read lock, so handles are
// used from many threads at once without contention on a writer lock.
// Freed slots are reused in FIFO order, which spreads generation bumps over
// all slots and delays the (2^32 frees of one slot) wrap as long as the
// table allows.
type table struct {
	mu    sync.RWMutex
	slots []slot
	free  []uint32 // FIFO of free slot indexes
	head  int
}

var handles table

// handleError explains why a token is not a valid handle of kind want. Its
// messages are what a C programmer debugging a use-after-free sees.
type handleError struct {
	tok  token
	want kind
	why  string
}

func (e *handleError) Error() string {
	return fmt.Sprintf("%#x is not a valid %s*: %s", uint64(e.tok), e.want, e.why)
}

// put stores obj and returns its token.
func (t *table) put(k kind, obj any) (token, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var i uint32
	if t.head < len(t.free) {
		i = t.free[t.head]
		t.head++
		if t.head == len(t.free) {
			t.free, t.head = t.free[:0], 0
		} else if t.head > 1024 && t.head*2 > len(t.free) {
			n := copy(t.free, t.free[t.head:])
			t.free, t.head = t.free[:n], 0
		}
	} else {
		if len(t.slots) >= maxSlots {
			return 0, fmt.Errorf("too many live handles (%d); free some", maxSlots)
		}
		t.slots = append(t.slots, slot{gen: 1})
		i = uint32(len(t.slots) - 1)
	}
	s := &t.slots[i]
	s.kind, s.obj = k, obj
	return makeToken(k, s.gen, i), nil
}

// check finds tok's slot; the caller holds t.mu.
func (t *table) check(tok token, want kind) (*slot, error) {
	if tok == 0 {
		return nil, &handleError{tok, want, "it is NULL"}
	}
	k, gen, i := tok.parts()
	if tok>>63 != 0 || k < kindSource || k > kindCQ || gen == 0 || int(i) >= len(t.slots) {
		return nil, &handleError{tok, want, "it is not a colio handle (corrupted or never returned by colio)"}
	}
	if k != want {
		return nil, &handleError{tok, want, "it is a " + k.String() + "* handle"}
	}
	s := &t.slots[i]
	if s.gen != gen || s.kind != k {
		return nil, &handleError{tok, want, "it was already freed"}
	}
	return s, nil
}

// get returns tok's object.
func (t *table) get(tok token, want kind) (any, error) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	s, err := t.check(tok, want)
	if err != nil {
		return nil, err
	}
	return s.obj, nil
}

// take removes tok's object from the table and returns it. Exactly one of
// several concurrent takes of the same token succeeds.
func (t *table) take(tok token, want kind) (any, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, err := t.check(tok, want)
	if err != nil {
		return nil, err
	}
	obj := s.obj
	s.obj, s.kind = nil, 0
	s.gen++
	if s.gen&genMask == 0 {
		s.gen = 1
	}
	_, _, i := tok.parts()
	t.free = append(t.free, i)
	return obj, nil
}

// live returns the number of handles in use (tests).
func (t *table) live() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.slots) - (len(t.free) - t.head)
}
