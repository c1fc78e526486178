// Package calibrate is `runner calibrate`: it runs the regression detector
// (package detect) on simulated nightly histories to measure how often it
// raises a false alarm and how often it catches a real step, so the
// detector's defaults and a recipe's settings are chosen from numbers
// rather than guessed.
//
// A trial is a history of --nights nights with log-normal night-to-night
// noise of CV --noise-cv, then two nights judged in turn, as the nightly
// pipeline would: a night that is flagged fails and stays out of the
// history, one that passes joins it. Without a change both judged nights
// count as no-change nights for the false-positive rate; with a step of
// --step-pct percent starting on the first (night k), the trial counts
// towards the power when night k or k+1 is flagged. The random numbers come
// from PCG seeded by --seed, so a run is repeatable.
package calibrate
