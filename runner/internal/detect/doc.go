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
// is a coefficient of variation (CV). The history is cleaned of outlier
// nights first: a night further than OutlierMADs robust standard deviations
// (1.4826 × MAD) from the median is set aside. The baseline is the mean of
// the nights kept and the noise their sample standard deviation. Rejecting
// outliers with the MAD and then using the ordinary mean and deviation keeps
// almost all of the efficiency of the ordinary estimates on clean data (the
// MAD alone has about 37 %), which matters with a few weeks of nights; and
// it makes the test a textbook prediction interval: for a clean normal
// history of m nights, (tonight − mean)/(s·√(1+1/m)) follows Student's t
// with m−1 degrees of freedom, so the false-alarm rate is what it says.
//
// Tonight's repetitions are averaged on the log scale. They do not shrink
// the threshold: the history holds one value per night, each already an
// aggregate of that night's repetitions, and night-to-night noise is what a
// night must be judged against. They can widen it: when the repetitions
// disagree more than nights usually do, the standard error of their mean
// replaces the night-to-night noise for tonight, so one noisy night cannot
// pass for a regression.
//
// One night can never show a step of three times the noise with both a
// false-alarm rate of 1 % and 90 % power (that needs 2.33 + 1.28 = 3.6
// standard deviations). So, like PyTorch's HUD, Detect also looks at two
// nights: tonight is flagged when it alone is beyond the single-night
// threshold, or when tonight and the night before are both at least one
// standard deviation worse, the night before was not already beyond the
// single-night threshold, and their mean is beyond the two-night
// threshold. Each rule gets half the false-alarm rate. The condition on the
// night before keeps one outlier night from alarming twice. `runner
// calibrate` measures the resulting false-positive rate and power.
//
// ChangePoints locates changes with E-Divisive means (Matteson and James,
// 2014) and judges its significance with Student's t-test on the two
// segments, as Apache Otava (formerly Hunter) does, so the result is
// deterministic rather than depending on random permutations.
package detect
