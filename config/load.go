package config

// Loading a configuration file: read, decode, default, validate — with
// the secrets and TLS files read (Load), none read (LoadOffline), or only
// one sink's (LoadForSink).

import (
	"fmt"
	"os"
	"slices"
	"strings"
)

// Load reads, decodes, defaults and validates the file at path. The error,
// when there is one, is an Errors listing every problem found.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	return Parse(path, data)
}

// LoadOffline is Load without reading secrets or TLS files: everything
// else is checked as Load does, and Needs lists what would be read.
func LoadOffline(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	return parse(path, data, true)
}

// LoadForSink is Load reading only the secrets and TLS files of the sink
// called sink (herald test --send: the others are listed, not read, so
// a test of one sink needs only its own secret). With no such sink it
// reads none.
func LoadForSink(path, sink string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	return parseWith(path, data, false, sink)
}

// Parse is Load for data already in memory; file is used in error messages.
func Parse(file string, data []byte) (*Config, error) { return parse(file, data, false) }

func parse(file string, data []byte, offline bool) (*Config, error) {
	return parseWith(file, data, offline, "")
}

func parseWith(file string, data []byte, offline bool, onlySink string) (*Config, error) {
	cfg := &Config{file: file, pos: positions{}, lines: strings.Split(string(data), "\n"), offline: offline}
	var errs Errors
	decodeDocument(file, data, cfg, cfg.pos, &errs)
	if onlySink != "" {
		cfg.onlySink = "\x00" // no sink of that name: read no secret
		for i, s := range cfg.Sinks {
			if s.Name == onlySink {
				cfg.onlySink = fmt.Sprintf("sinks[%d].", i)
			}
		}
	}
	if len(errs) > 0 && (errs[0].Line == 0 || strings.HasPrefix(errs[0].Msg, "YAML syntax error") || len(cfg.Rules)+len(cfg.Sinks) == 0) {
		return nil, errs.sorted() // no document to check further
	}
	cfg.applyDefaults()
	// Type errors and semantic errors are reported together, so one run
	// shows every problem; a semantic error about a field (or its
	// parent or child) that already has a type error would only repeat it.
	typeErrs := slices.Clone(errs)
	for _, e := range cfg.validate() {
		if !slices.ContainsFunc(typeErrs, func(d *Error) bool { return related(d.Path, e.Path) }) {
			errs = append(errs, e)
		}
	}
	if len(errs) > 0 {
		return nil, errs.sorted()
	}
	return cfg, nil
}
