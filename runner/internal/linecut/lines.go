// Package linecut cuts a stream, written in pieces of any size, into lines
// of a bounded length: the readers of a child's output see whole lines
// and hold no more than one line's bound, however the child writes.
package linecut

import "bytes"

// DefaultMax is a line's bound where Splitter.Max is 0.
const DefaultMax = 4096

// Splitter holds the line being written; the zero value cuts lines at
// DefaultMax.
type Splitter struct {
	// Max is the longest line handed on; the rest of a longer one is
	// dropped.
	Max     int
	partial []byte
}

// Write hands each line p completes to line ("\n" or "\r" ends one), the
// slice valid only during the call, and keeps the unfinished rest.
func (s *Splitter) Write(p []byte, line func([]byte)) {
	for {
		i := bytes.IndexAny(p, "\n\r")
		if i < 0 {
			s.partial = s.appendCapped(p)
			return
		}
		s.partial = s.appendCapped(p[:i])
		line(s.partial)
		s.partial = s.partial[:0]
		p = p[i+1:]
	}
}

// appendCapped appends as much of b as keeps the line within Max:
// appending a huge write whole and cutting after would keep its size as
// the line's capacity.
func (s *Splitter) appendCapped(b []byte) []byte {
	limit := s.Max
	if limit <= 0 {
		limit = DefaultMax
	}
	room := limit - len(s.partial)
	if room <= 0 {
		return s.partial
	}
	return append(s.partial, b[:min(room, len(b))]...)
}
