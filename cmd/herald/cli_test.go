package main

import (
	"bytes"
	"context"
	"flag"
	"io"
	"slices"
	"strings"
	"testing"
)

// TestHelp: every command and subcommand answers -h and --help with its
// own usage on stdout and exit 0, touching nothing else.
func TestHelp(t *testing.T) {
	beside(t)
	for _, tt := range []struct {
		args []string
		want string // in the usage: the command's own synopsis or flags
	}{
		{[]string{}, "herald silence expire"},
		{[]string{"help"}, "herald silence expire"},
		{[]string{"run"}, "herald run -f FILE"},
		{[]string{"validate"}, "herald validate -f FILE"},
		{[]string{"test"}, "--send string"},
		{[]string{"incidents"}, "herald incidents [--namespace NS]"},
		{[]string{"silence"}, "herald silence create --incident ID"},
		{[]string{"silence", "create"}, "--incident string"},
		{[]string{"silence", "list"}, "herald silence list [--namespace NS | -A]"},
		{[]string{"silence", "expire"}, "herald silence expire (--namespace NS | --all-namespaces) NAME"},
		{[]string{"version"}, "herald version"},
	} {
		for _, h := range []string{"-h", "--help"} {
			args := append(slices.Clone(tt.args), h)
			if len(tt.args) == 0 || tt.args[0] == "help" {
				args = []string{h}
			}
			t.Run(strings.Join(args, " "), func(t *testing.T) {
				var stdout, stderr bytes.Buffer
				code := runMain(context.Background(), args, &stdout, &stderr)
				if code != 0 || !strings.Contains(stdout.String(), "Usage:") || !strings.Contains(stdout.String(), tt.want) || stderr.Len() > 0 {
					t.Errorf("exit %d, stdout %q, stderr %q; want 0 and a usage with %q on stdout only", code, stdout.String(), stderr.String(), tt.want)
				}
			})
		}
	}
}

// TestUnknownFlagExitsTwo: a flag no command knows is a usage error, with
// the usage on stderr and nothing on stdout.
func TestUnknownFlagExitsTwo(t *testing.T) {
	beside(t)
	for _, args := range [][]string{
		{"run", "--bogus"}, {"validate", "--bogus"}, {"test", "--bogus"}, {"incidents", "--bogus"},
		{"silence", "create", "--bogus"}, {"silence", "list", "--bogus"}, {"silence", "expire", "x", "--bogus"}, {"version", "--bogus"},
	} {
		var stdout, stderr bytes.Buffer
		code := runMain(context.Background(), args, &stdout, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), "flag provided but not defined: -bogus") || !strings.Contains(stderr.String(), "Usage:") || stdout.Len() > 0 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2 and the error with the usage on stderr", args, code, stdout.String(), stderr.String())
		}
	}
}

// TestParseFlagsInterspersed: flags after and between positional
// arguments are flags; after "--" everything is positional.
func TestParseFlagsInterspersed(t *testing.T) {
	beside(t)
	for _, tt := range []struct {
		args    []string
		ns      string
		all     bool
		wantPos []string
	}{
		{[]string{"NAME", "--namespace", "shop"}, "shop", false, []string{"NAME"}},
		{[]string{"--namespace=shop", "a", "-A", "b"}, "shop", true, []string{"a", "b"}},
		{[]string{"a", "--", "--namespace", "x"}, "", false, []string{"a", "--namespace", "x"}},
		{[]string{"--", "-A"}, "", false, []string{"-A"}},
		{nil, "", false, nil},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		ns := fs.String("namespace", "", "")
		all := fs.Bool("A", false, "")
		pos, code, ok := parseFlags(fs, "t", tt.args, io.Discard, io.Discard)
		if !ok || code != 0 || *ns != tt.ns || *all != tt.all || !slices.Equal(pos, tt.wantPos) {
			t.Errorf("%q: namespace %q, -A %v, positional %q (ok %v); want %q, %v, %q", tt.args, *ns, *all, pos, ok, tt.ns, tt.all, tt.wantPos)
		}
	}
}

// TestRunTakesF: herald run -f FILE reads FILE, as validate -f and test -f
// do (the positioned config error shows it was read).
func TestRunTakesF(t *testing.T) {
	beside(t)
	kc, conns := countingAPIServer(t)
	var stdout, stderr bytes.Buffer
	code := runMain(context.Background(), []string{"run", "-f", "testdata/unknown-detector.yaml", "--kubeconfig", kc}, &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), `unknown-detector.yaml:4:15: rules[0].detector: unknown detector "crashlop"`) || conns.Load() != 0 {
		t.Errorf("run -f: exit %d, stderr %q; want 1 and the file's error", code, stderr.String())
	}
}
