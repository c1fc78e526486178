package detect

import (
	"fmt"
	"math"
)

// RerunReps is the fewest repetitions a flagged night is judged on: with
// fewer, the gate runs the bench again on the same server until it has
// them (re-run on alarm), so one slow run cannot fail a night.
const RerunReps = 3

// RerunRelax is how much looser the second look is. The second look only
// confirms an alarm the first raised, so the night's false-alarm rate
// stays below the first look's whatever the second does; a looser second
// look gives back the power that judging on the median of fresh runs
// takes (they carry none of the first run's bad luck).
const RerunRelax = 3

// Rerun judges a flagged night again on all its repetitions, the first
// ones and those the re-run added. The night stays flagged when the
// combined p-value max(p₁, p₂/RerunRelax), a valid p-value since the
// alarm needed p₁ ≤ α, is within the false-alarm rate and the drop is
// beyond the floor.
func Rerun(first Decision, history, all []float64, cfg Config) (Decision, error) {
	if !first.Flagged {
		return first, nil
	}
	c, err := cfg.withDefaults()
	if err != nil {
		return Decision{}, err
	}
	d, err := Detect(history, all, cfg)
	if err != nil {
		return Decision{}, err
	}
	p2 := d.P
	d.P = math.Max(first.P, d.P/RerunRelax)
	flagged := d.P <= c.FalseAlarmRate && d.WorsePct >= c.MinEffectPct
	note := fmt.Sprintf("re-run on alarm: %d repetitions, median %.4g (first look p = %.2g, second p = %.2g)", len(all), d.Tonight, first.P, p2)
	if flagged == d.Flagged && flagged {
		d.Why += "; " + note
		return d, nil
	}
	if !flagged {
		d.Flagged, d.Status, d.Rule = false, StatusOK, ""
		d.LastGood, d.FirstBad, d.Widened = 0, 0, false
		d.Why = fmt.Sprintf("not flagged after a re-run on alarm: the first look flagged tonight, but %s", note)
		return d, nil
	}
	// The second look alone would pass at α but passes the relaxed bound:
	// the first look's verdict and range stand.
	first.P, first.Tonight, first.Reps = d.P, d.Tonight, d.Reps
	first.Why += "; " + note
	return first, nil
}
