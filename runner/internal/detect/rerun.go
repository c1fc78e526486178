package detect

import (
	"fmt"
	"math"

	"github.com/benchkite/benchkite/internal/numfmt"
)

// RerunReps is the fewest repetitions a flagged night is judged on: with
// fewer, the gate runs the bench again on the same server until it has
// them (re-run on alarm), so one slow run cannot fail a night.
const RerunReps = 3

// AlarmFactor is how much looser the first look is than the verdict:
// a night whose p-value is within AlarmFactor times the false-alarm rate
// is run again (re-run on alarm), and the verdict is taken on the median
// of all its runs, which carries less of the runs' own noise. The two
// looks together are one valid test: Rerun's p-value is
// max(p₁/AlarmFactor, p₂).
const AlarmFactor = 6

// Rerun judges a night whose first look raised an alarm again on all its
// repetitions, the first ones and those the re-run added. The night is
// flagged when the combined p-value max(p₁/AlarmFactor, p₂) is within
// the false-alarm rate and the drop is beyond the floor.
func Rerun(first Decision, history, all []float64, cfg Config) (Decision, error) {
	if !first.Alarm {
		return first, nil
	}
	c, err := cfg.withDefaults()
	if err != nil {
		return Decision{}, err
	}
	// The first look found tonight no spike; the second judges how much
	// worse it is, on every run.
	second := cfg
	second.OneShot = true
	d, err := detect(history, all, first.Reps, second)
	if err != nil {
		return Decision{}, err
	}
	p2 := d.PNight
	d.PNight = math.Max(first.PNight/AlarmFactor, p2)
	flagged := d.PNight <= c.FalseAlarmRate && d.WorsePct >= c.MinEffectPct && !d.Unconfirmed
	note := fmt.Sprintf("re-run on alarm: %d repetitions, median %s (first look p %s, second p %s)", len(all), numfmt.Sig(d.Tonight, 4), numfmt.P(first.PNight), numfmt.P(p2))
	switch {
	case flagged:
		// The second look's verdict and range stand.
		d.Why += "; " + note
	case first.Flagged:
		d.Why = "not flagged after a re-run on alarm: the first look flagged tonight, but " + note
	default:
		d.Why = "not flagged after a re-run on alarm: " + note
	}
	if !flagged {
		d.Flagged, d.Alarm, d.Status, d.Rule = false, false, StatusOK, ""
		d.LastGood, d.FirstBad, d.Widened = 0, 0, false
		if c.Carried == nil || knownAfter(c.Known, c.Carried.Index) {
			d.Carry = nil // a new regression not confirmed opens none
		}
	}
	return d.spendable(cfg).finite(len(history))
}
