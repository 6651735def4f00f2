package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/herald-k8s/herald/config"
	"github.com/herald-k8s/herald/internal/route"
	"github.com/herald-k8s/herald/internal/rules"
)

// loadConfig loads the file and compiles its rules: every error found,
// each with its file:line:col.
func loadConfig(path string) (*config.Config, *rules.Set, error) {
	return compileConfig(path, config.Load)
}

// compileConfig loads the file with load and compiles its rules.
func compileConfig(path string, load func(string) (*config.Config, error)) (*config.Config, *rules.Set, error) {
	if path == "" {
		return nil, nil, fmt.Errorf("herald: -f FILE (--config FILE) is required: the configuration file")
	}
	cfg, err := load(path)
	if err != nil {
		return nil, nil, err
	}
	set, err := rules.Compile(cfg)
	_, routeErrs := route.Compile(cfg)
	if errs := append(checkBodyTemplates(cfg), routeErrs...); len(errs) > 0 {
		if ce, ok := err.(config.Errors); ok {
			errs = append(ce, errs...)
		} else if err != nil {
			return nil, nil, err
		}
		return nil, nil, errs
	}
	if err != nil {
		return nil, nil, err
	}
	return cfg, set, nil
}

// routesOf compiles the routes of a configuration compileConfig
// accepted (so without errors).
func routesOf(cfg *config.Config) *route.Table {
	t, _ := route.Compile(cfg)
	return t
}

// cmdValidate checks a configuration without connecting to anything.
func cmdValidate(args []string, out, errOut io.Writer) int {
	fs := flag.NewFlagSet("herald validate", flag.ContinueOnError)
	configPath := fs.String("config", "", "path of the configuration file")
	fs.StringVar(configPath, "f", "", "shorthand for --config")
	offline := fs.Bool("offline", false, "check everything but the secrets and TLS files, and list those instead (for CI pipelines without the production secrets)")
	const synopsis = "herald validate -f FILE [--offline]"
	if code, ok := parseNoArgs(fs, synopsis, args, out, errOut); !ok {
		return code
	}
	if *configPath == "" {
		fmt.Fprintf(errOut, "herald validate: which file? give -f FILE\n\n")
		printUsage(errOut, fs, synopsis)
		return 2
	}
	load := config.Load
	if *offline {
		load = config.LoadOffline
	}
	cfg, _, err := compileConfig(*configPath, load)
	if err != nil {
		fmt.Fprintln(errOut, err)
		return 1
	}
	for _, w := range configWarnings(cfg) {
		fmt.Fprintf(errOut, "%s: warning: %s\n", *configPath, w)
	}
	if !*offline {
		fmt.Fprintf(out, "%s: OK\n", *configPath)
		return 0
	}
	fmt.Fprintf(out, "%s: OK (offline: secrets and TLS files were not read)\n", *configPath)
	if needs := cfg.Needs(); len(needs) > 0 {
		fmt.Fprintln(out, "herald reads at start:")
		for _, n := range needs {
			fmt.Fprintf(out, "  %s: %s\n", n.Path, n.Source)
		}
	}
	return 0
}

// configWarnings are what a valid configuration would be better without:
// said by validate, never failing it (a CI pipeline's exit status stays
// what the configuration's validity makes it).
func configWarnings(cfg *config.Config) []string {
	var out []string
	if cfg.ClusterName == "" {
		// A channel that hears from two clusters cannot tell them apart.
		out = append(out, "clusterName is not set: messages will not say which cluster they come from")
	}
	for _, sc := range cfg.Sinks {
		in := sc.Slack.InteractiveOrNil()
		switch {
		case in == nil:
		case !in.SilenceGranted():
			out = append(out, "sinks "+sc.Name+": slack.interactive.allow lets nobody silence, so its messages carry no Silence buttons (list user or group IDs under silence: to offer them)")
		case in.AnyoneMaySilence():
			out = append(out, "sinks "+sc.Name+": slack.interactive.allow lets anyone in the channel silence (silence: [\"*\"]) — guests and bots included; name the on-call users or user groups instead")
		}
	}
	return out
}
