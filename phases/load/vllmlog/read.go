package vllmlog

import (
	"bufio"
	"io"
)

// Read parses a whole log from r and returns its summary. Read errors are
// returned with the summary of what was read before them.
func Read(r io.Reader) (*Summary, error) { return ReadWith(New(), r) }

// ReadWith is Read with a given parser (NewAuto's, for one that also reads
// other engines' logs).
func ReadWith(p *Parser, r io.Reader) (*Summary, error) {
	s := NewSummary()
	br := bufio.NewReaderSize(r, 64<<10)
	buf := make([]byte, 32<<10)
	for {
		n, err := br.Read(buf)
		for _, rec := range p.Write(buf[:n]) {
			s.Add(rec)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return s.Finish(), err
		}
	}
	for _, rec := range p.Flush() {
		s.Add(rec)
	}
	return s.Finish(), nil
}
