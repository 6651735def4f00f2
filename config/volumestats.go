package config

import "time"

// VolumeStats tunes how herald reads the kubelets' volume stats for the
// volume-filling detector (only while a rule uses it): each node's stats
// summary through the API server's node proxy, which needs get on
// nodes/proxy (docs/security.md).
type VolumeStats struct {
	// Interval between two readings of every node (default 1m, the
	// kubelet's own volumeStatsAggPeriod: it measures no more often).
	Interval time.Duration `yaml:"interval"`
	// Concurrency bounds the requests in flight (default 4).
	Concurrency int `yaml:"concurrency"`
	// Timeout bounds each node's request (default 10s).
	Timeout time.Duration `yaml:"timeout"`
}

// Defaults of volumeStats.
const (
	DefaultVolumeStatsInterval    = time.Minute
	DefaultVolumeStatsConcurrency = 4
	DefaultVolumeStatsTimeout     = 10 * time.Second
)

func (v *VolumeStats) applyDefaults() {
	if v.Interval == 0 {
		v.Interval = DefaultVolumeStatsInterval
	}
	if v.Concurrency == 0 {
		v.Concurrency = DefaultVolumeStatsConcurrency
	}
	if v.Timeout == 0 {
		v.Timeout = min(DefaultVolumeStatsTimeout, v.Interval)
	}
}

func (v *VolumeStats) validate(add func(path, format string, args ...any)) {
	if v.Interval < time.Second || v.Interval > time.Hour {
		add("volumeStats.interval", "must be between 1s and 1h (the kubelet measures once a minute by default), got %s", v.Interval)
	}
	if v.Concurrency < 1 || v.Concurrency > 64 {
		add("volumeStats.concurrency", "must be between 1 and 64 requests at once, got %d", v.Concurrency)
	}
	if v.Timeout <= 0 || v.Timeout > v.Interval {
		add("volumeStats.timeout", "must be more than 0 and at most the interval (%s), got %s", v.Interval, v.Timeout)
	}
}
