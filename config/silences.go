package config

import "time"

// Silences bounds muting by people (docs/silences.md).
type Silences struct {
	// MaxDuration is the longest a Silence, a ClusterSilence or a
	// herald.io/silence-until annotation mutes (default and most 720h,
	// 30 days): a Silence from its start, an annotation from when herald
	// first saw its value. A forgotten mute must end on its own.
	MaxDuration *time.Duration `yaml:"maxDuration"`
}

// MaxSilenceDuration is the default and the most silences.maxDuration
// may be: the Silence CRDs refuse a silence longer than this.
const MaxSilenceDuration = 30 * 24 * time.Hour

// SilenceMaxDuration is silences.maxDuration, or its default.
func (c *Config) SilenceMaxDuration() time.Duration {
	if c.Silences.MaxDuration == nil {
		return MaxSilenceDuration
	}
	return *c.Silences.MaxDuration
}

func (c *Config) validateSilences(add func(path, format string, args ...any)) {
	d := c.Silences.MaxDuration
	switch {
	case d == nil:
	case *d < time.Minute:
		add("silences.maxDuration", "must be at least 1m, got %s", *d)
	case *d > MaxSilenceDuration:
		add("silences.maxDuration", "must be at most 720h (30 days; the Silence CRDs refuse longer silences), got %s", *d)
	}
}
