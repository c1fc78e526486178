package summary

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/benchkite/benchkite/runner/internal/results"
)

// CheckNumbers refuses a summary holding a number no measurement has
// (results.CheckValue): one such night in the history would otherwise
// reach every later gate, statistic and chart of its recipe. The error
// names the member, as a path such as bench[0].metrics.output_throughput.
func CheckNumbers(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return walkNumbers(dec, "")
}

func walkNumbers(dec *json.Decoder, path string) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch t := tok.(type) {
	case json.Number:
		v, err := strconv.ParseFloat(string(t), 64)
		if err != nil {
			return fmt.Errorf("%s: %s is %w (beyond a float64)", path, t, results.ErrImplausible)
		}
		if err := results.CheckValue(v); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	case json.Delim:
		switch t {
		case '{':
			for dec.More() {
				key, err := dec.Token()
				if err != nil {
					return err
				}
				k, _ := key.(string)
				sub := k
				if path != "" {
					sub = path + "." + k
				}
				if err := walkNumbers(dec, sub); err != nil {
					return err
				}
			}
			_, err = dec.Token()
			return err
		case '[':
			for i := 0; dec.More(); i++ {
				if err := walkNumbers(dec, fmt.Sprintf("%s[%d]", path, i)); err != nil {
					return err
				}
			}
			_, err = dec.Token()
			return err
		}
	}
	return nil
}
