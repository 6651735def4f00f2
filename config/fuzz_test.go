package config

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

var positioned = regexp.MustCompile(`^fuzz\.yaml:\d+:\d+: `)

// FuzzParse: any input either loads or fails with errors that all carry a
// file:line:col position; nothing panics.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.yaml")
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte("rules: [{name: a, kind: Pod, detector: crashloop, for: 5m, sinks: [b]}]\nsinks: [{name: b, webhook: {url: 'http://x', headers: {a: b}}}]"))
	f.Add([]byte("rules: &a [*a]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse("fuzz.yaml", data)
		if err == nil {
			if cfg == nil || len(cfg.Rules) == 0 {
				t.Fatal("Parse accepted a config without rules")
			}
			return
		}
		var errs Errors
		if !errors.As(err, &errs) || len(errs) == 0 {
			t.Fatalf("error is not config.Errors: %v", err)
		}
		for _, e := range errs {
			if !positioned.MatchString(e.Error()) {
				t.Fatalf("error without position: %q", e.Error())
			}
		}
	})
}
