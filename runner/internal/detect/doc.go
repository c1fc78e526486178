// Package detect decides whether tonight's value of a benchmark metric is a
// regression, given the values of past nights, and finds where in a series
// a change began.
//
// A fixed "more than X % below the median" rule fires too often on noisy
// metrics and too rarely on quiet ones. Detect instead estimates the
// night-to-night noise of the metric from its own history and flags only a
// drop that is larger than both the recipe's minimum effect (a floor, in
// percent) and what the noise allows at a chosen false-alarm rate.
//
// # Model and choices
//
// Values are compared on a log scale, so a change is a ratio and the noise
// is a coefficient of variation (CV). The level is the median of the
// current regime; the noise is the standard deviation of every regime's
// nights around their own mean, pooled, leaving out the night before
// tonight (it may be the first night of a step not caught at once). No
// night is set aside as an outlier unless asked: with heavy-tailed nights
// that drops exactly the nights that show how wide the tails are. For a
// clean normal history of m nights, (tonight − level)/(s·√(1+π/(2m)))
// is close to Student's t with m−1 degrees of freedom; the degrees of
// freedom are cut where the nights' kurtosis or lag-1 autocorrelation
// says s is rougher than that (a chi-square with the same relative
// variance), so heavy tails and wandering nights widen the bound.
//
// A night is judged twice when it has fewer than RerunReps repetitions.
// The first look raises the alarm when its p-value is within AlarmFactor
// times the false-alarm rate; the bench is run again on the same server
// and the second look decides on the median of all the runs. Runs of one
// night share the server and the image, so only their run-to-run part of
// the noise shrinks with more of them; it is estimated from the spread of
// the fresh runs (the first one raised the alarm and is not a fair
// sample) and can take off no more than a past night's variance allows.
// The night's p-value max(p₁/AlarmFactor, p₂) is a valid one. Where the
// noise is all the night's (autocorrelated or drifting nights), the
// second look is the first again and the rate is what it says.
//
// One night can never show a step of three times the noise with both a
// false-alarm rate of 1 % and 90 % power (that needs 2.33 + 1.28 = 3.6
// standard deviations). So, like PyTorch's HUD, Detect also looks at two
// nights: tonight is flagged when it alone is beyond the single-night
// threshold, or when tonight and the night before are both worse, the
// night before was not already beyond the single-night threshold, and
// their mean is beyond the two-night threshold. The two-night rule gets
// DefaultTwoNightShare of the false-alarm rate (weighted Bonferroni).
//
// A regression that is neither fixed nor accepted stays red. Once the
// gate confirmed it (the search finds the change and the gate flagged one
// of its nights, or, before the search can see it, two of the last three
// nights were flagged: Config.Flagged), tonight is judged on the
// regression's nights and tonight together against the level before it,
// and passes only when it is nearer that level than the regression's
// ("fixed"). Judged alone, a night of a regression of three times the
// noise passes one time in four, and the regression would flap.
//
// A flagged night hands its regression on to the next (Config.Carried,
// Decision.Carry), so that it is judged against the level before it
// however long ago that was. It is pending until its nights together are
// as far off that level as a fifth of the false-alarm rate allows, the
// level's own nights taken as one regime, wandering as they do; then it
// is held (Carried.Held): red while its nights stay off the level,
// until FixedNights nights in a row are nearer it than the level since,
// a known change after it accepts it, or its nights are no worse than
// chance. A held night raises no re-run (Decision.Held), and a build's
// budget weighs it by the strongest evidence its nights have given
// (Carried.P). A pending regression its next nights do not hold is
// over after a few nights: one false alarm holds no month.
//
// A build's false-alarm budget (package gate) spends p-values far below
// the per-night rate, where a normal model is badly wrong if the nights'
// tails are heavy. Decision.P is therefore PNight up to the rate and,
// below it, the rate times the tail of Student's t with TailDoF degrees of
// freedom beyond tonight's statistic relative to its tail beyond the
// threshold. `runner calibrate` measures the resulting false-alarm rates,
// power, culprit coverage and how long a regression stays red.
//
// ChangePoints locates changes with E-Divisive means (Matteson and James,
// 2014) and judges its significance with Student's t-test on the two
// segments, as Apache Otava (formerly Hunter) does, so the result is
// deterministic rather than depending on random permutations.
package detect
