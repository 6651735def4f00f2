package config

import (
	"errors"
	"testing"
	"time"
)

func TestSilenceMaxDuration(t *testing.T) {
	const base = "rules: [{name: r, kind: Pod, detector: crashloop, sinks: [h]}]\nsinks: [{name: h, webhook: {url: 'http://x'}}]\n"
	cfg, err := Parse("herald.yaml", []byte(base))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.SilenceMaxDuration(); got != 30*24*time.Hour {
		t.Errorf("default: %s, want 720h", got)
	}
	cfg, err = Parse("herald.yaml", []byte(base+"silences:\n  maxDuration: 72h\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.SilenceMaxDuration(); got != 72*time.Hour {
		t.Errorf("silences.maxDuration 72h: %s", got)
	}
	for value, want := range map[string]string{
		"2160h": `herald.yaml:4:16: silences.maxDuration: must be at most 720h (30 days; the Silence CRDs refuse longer silences), got 2160h0m0s`,
		"0s":    `herald.yaml:4:16: silences.maxDuration: must be at least 1m, got 0s`,
		"-1h":   `herald.yaml:4:16: silences.maxDuration: invalid duration "-1h"`,
		"often": `herald.yaml:4:16: silences.maxDuration: `,
	} {
		_, err := Parse("herald.yaml", []byte(base+"silences:\n  maxDuration: "+value+"\n"))
		var errs Errors
		if !errors.As(err, &errs) || len(errs) != 1 || len(errs[0].Error()) < len(want) || errs[0].Error()[:len(want)] != want {
			t.Errorf("maxDuration %s: %v\nwant %s", value, err, want)
		}
	}
}
