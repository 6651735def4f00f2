package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// parseFlags parses a command's arguments the way people type them:
// flags may come before, between or after positional arguments
// (`herald silence expire NAME --namespace shop`), and `--` ends the
// flags. Go's flag package stops at the first non-flag, so the rest is
// parsed again after each positional argument is taken.
//
// -h and --help print the command's usage on stdout and exit 0 (asked
// for, it is an answer, not an error); a bad flag prints the error and
// the usage on stderr and exits 2. ok is false when the command should
// return exit at once.
func parseFlags(fs *flag.FlagSet, synopsis string, args []string, stdout, stderr io.Writer) (positional []string, exit int, ok bool) {
	// The flag package prints its own errors and usage to the output; they
	// are printed here instead, each to where it belongs.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	for {
		err := fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			printUsage(stdout, fs, synopsis)
			return nil, 0, false
		}
		if err != nil {
			fmt.Fprintf(stderr, "%s: %v\n\n", fs.Name(), err)
			printUsage(stderr, fs, synopsis)
			return nil, 2, false
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, 0, true
		}
		// Parse stopped either at "--" (which it consumes: everything
		// after is positional) or at a positional argument. A "--" given
		// as a flag's value (--comment --) reads as the former; harmless,
		// the rest is then taken as positional.
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(positional, rest...), 0, true
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// parseNoArgs is parseFlags for a command that takes flags only: a
// positional argument is a mistake, said with the usage (exit 2).
func parseNoArgs(fs *flag.FlagSet, synopsis string, args []string, stdout, stderr io.Writer) (exit int, ok bool) {
	pos, exit, ok := parseFlags(fs, synopsis, args, stdout, stderr)
	if ok && len(pos) > 0 {
		hint := ""
		if fs.Lookup("f") != nil && (strings.HasSuffix(pos[0], ".yaml") || strings.HasSuffix(pos[0], ".yml")) {
			hint = fmt.Sprintf(" (the configuration file? -f %s)", pos[0])
		}
		fmt.Fprintf(stderr, "%s: unexpected argument %q%s\n\n", fs.Name(), pos[0], hint)
		printUsage(stderr, fs, synopsis)
		return 2, false
	}
	return exit, ok
}

// printUsage prints a command's synopsis and its flags, written as
// people type them: --long, -s.
func printUsage(w io.Writer, fs *flag.FlagSet, synopsis string) {
	fmt.Fprintf(w, "Usage:\n  %s\n", synopsis)
	first := true
	fs.VisitAll(func(f *flag.Flag) {
		if first {
			fmt.Fprintln(w, "\nFlags:")
			first = false
		}
		dash := "--"
		if len(f.Name) == 1 {
			dash = "-"
		}
		kind, usage := flag.UnquoteUsage(f)
		line := "  " + dash + f.Name
		if kind != "" {
			line += " " + kind
		}
		fmt.Fprintf(w, "%s\n    \t%s", line, strings.ReplaceAll(usage, "\n", "\n    \t"))
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" && f.DefValue != "0s" && f.DefValue != "[]" {
			fmt.Fprintf(w, " (default %q)", f.DefValue)
		}
		fmt.Fprintln(w)
	})
}
