package summary

import (
	"path/filepath"
	"regexp"
	"time"
)

// setAsideLayout is the UTC timestamp a set-aside results directory ends in.
const setAsideLayout = "20060102T150405.000000000Z"

var setAsideRE = regexp.MustCompile(`\.old-\d{8}T\d{6}\.\d{9}Z$`)

// SetAsideName is where a results directory left by an earlier run is
// moved at t: <dir>.old-<UTC timestamp>. It keeps that run's files for a
// person to read while no reader takes them for a recipe's results.
func SetAsideName(dir string, t time.Time) string {
	return dir + ".old-" + t.UTC().Format(setAsideLayout)
}

// IsSetAside reports whether dir is a results directory moved aside by
// SetAsideName, which readers of results/<recipe>/ skip.
func IsSetAside(dir string) bool {
	return setAsideRE.MatchString(filepath.Base(filepath.Clean(dir)))
}
