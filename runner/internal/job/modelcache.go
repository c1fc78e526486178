package job

import (
	"errors"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/benchkite/benchkite/runner/internal/summary"
)

// cacheMark is the model cache as the server found it.
type cacheMark struct {
	dir   string
	bytes int64 // -1: not measurable here
	at    time.Time
}

// modelCacheStart records the profile's model cache before the server
// starts: where it is, whether it persists, and its size, so that the
// summary can say whether this run downloaded the model and how long the
// server took with the download.
func (j *Job) modelCacheStart() cacheMark {
	mc, err := j.res.Profile.ModelCache(j.getenv)
	if err != nil {
		return cacheMark{bytes: -1}
	}
	j.sum.ModelCache = &summary.ModelCache{Dir: mc.Dir, Backing: mc.Backing, Persistent: mc.Persistent, DownloadedBytes: -1}
	m := cacheMark{dir: mc.Dir, bytes: -1, at: j.now()}
	if j.res.Profile.Runtime == "docker" && j.res.Profile.HFHome == "" {
		return m // a docker volume: not a directory the runner sees
	}
	m.bytes = dirBytes(mc.Dir)
	return m
}

// modelCacheDone records what the cache gained by the time the server
// was ready.
func (j *Job) modelCacheDone(m cacheMark, ready bool) {
	if j.sum.ModelCache == nil || !ready {
		return
	}
	j.sum.ModelCache.ReadySeconds = j.now().Sub(m.at).Round(time.Second).Seconds()
	if m.bytes < 0 {
		return
	}
	if now := dirBytes(m.dir); now >= 0 {
		j.sum.ModelCache.DownloadedBytes = max(now-m.bytes, 0)
	}
}

// dirBytes is the size of the files under dir; a missing dir is empty,
// one that cannot be read is -1.
func dirBytes(dir string) int64 {
	var total int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				total += info.Size()
			}
		}
		return nil
	})
	switch {
	case err == nil:
		return total
	case errorsIsNotExist(err):
		return 0
	}
	return -1
}

func errorsIsNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
