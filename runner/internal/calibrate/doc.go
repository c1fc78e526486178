// Package calibrate is `runner calibrate`: it runs the regression gate's
// detector (package detect) in a simulation of the loop the nightly
// pipeline runs, to measure how often it raises a false alarm, how often
// and how soon it catches a real step, whether the culprit range it names
// holds the night the step began, and how often a whole build is falsely
// red within its false-alarm budget.
//
// A trial runs one recipe-metric night after night: every night from the
// fifth is judged against the last --nights nights, a night that raises
// the alarm is re-run (two more runs on the same server when it had fewer
// than three) and judged again on all of them, and every night, flagged or
// not, joins the history, as the history step keeps failed nights too. The build false-alarm rate spends
// the night's p-values through gate.Spend, as the report step does.
// Noise models (--noise-model) draw each run's deviation: log-normal,
// Student's t, rare outliers, AR(1) nights, two pools of servers, a
// drifting level, an improvement 15 nights back; --night-share of the
// variance is the night's (the server, the image) and does not change on a
// re-run. --from-history resamples a recipe's real nights instead. The
// random numbers come from PCG seeded by --seed, so a run is repeatable.
package calibrate
