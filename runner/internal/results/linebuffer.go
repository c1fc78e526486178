package results

// lineBuffer gathers what a child process prints into whole lines.
type lineBuffer []byte

// feed hands each line that b completes to scan, without its newline. A
// line keeps only its first max bytes: output without line breaks must
// not grow the runner.
func (l *lineBuffer) feed(b []byte, max int, scan func(line string)) {
	for _, c := range b {
		if c == '\n' {
			scan(string(*l))
			*l = (*l)[:0]
			continue
		}
		if len(*l) < max {
			*l = append(*l, c)
		}
	}
}
