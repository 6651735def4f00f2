// Command herald watches a Kubernetes cluster and notifies people when
// something in it goes wrong.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
	_ "time/tzdata" // time zones of maintenance windows, in an image without /usr/share/zoneinfo
)

// version, revision and buildDate are stamped at build time with
// -ldflags "-X main.version=... -X main.revision=... -X main.buildDate=..."
// (make build, make image, the Dockerfile).
var (
	version   = "dev"
	revision  = ""
	buildDate = ""
)

// versionLine is what `herald version` prints: the version, and the
// commit and build date when the build stamped them.
func versionLine() string {
	line := "herald " + version
	if revision != "" || buildDate != "" {
		line += fmt.Sprintf(" (commit %s, built %s)", orUnknown(revision), orUnknown(buildDate))
	}
	return line
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

const usage = `herald watches a Kubernetes cluster and notifies people when something goes wrong.

Usage:
  herald run -f FILE [--kubeconfig FILE] [--context NAME] [--log-format json|text] [--log-level LEVEL]
  herald validate -f FILE [--offline]
  herald test -f FILE (--object OBJECTS.yaml ... | --live) [--route]
  herald test -f FILE --send SINK
  herald incidents [--namespace NS] [-o table|json]
  herald silence create (--namespace NS | --all-namespaces) (--workload W | --name GLOB | --rule R | ...) (--for 2h | --until TIME) --comment TEXT
  herald silence create --incident ID (--for 2h | --until TIME) --comment TEXT
  herald silence list [--namespace NS | -A]
  herald silence expire (--namespace NS | --all-namespaces) NAME
  herald healthcheck [--url http://HOST:PORT/readyz]
  herald version

Commands that talk to a cluster find it as kubectl does: --kubeconfig, else
$KUBECONFIG, else ~/.kube/config, else in-cluster; --context picks a context.
Flags may follow arguments; "herald COMMAND --help" lists a command's flags.
`

// exitStartOver is what `herald run` returns when it lost the leader
// lease: main then executes herald afresh in the same process, so the new
// term starts from the ledger with nothing of the old one in memory.
const exitStartOver = 75

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	code := cli{stdout: os.Stdout, stderr: os.Stderr, routeKlog: true, recordStartOvers: true, bufferLogs: true}.run(ctx, os.Args[1:])
	stopped := ctx.Err() != nil // a SIGTERM means stop, not start over
	stop()
	if code == exitStartOver && !stopped {
		time.Sleep(time.Second) // let the control plane breathe between terms
		err := syscall.Exec("/proc/self/exe", os.Args, os.Environ())
		fmt.Fprintln(os.Stderr, "herald: cannot start over:", err)
		code = 1
	}
	os.Exit(code)
}

// cli is one invocation's surroundings.
type cli struct {
	stdout, stderr io.Writer
	// routeKlog sends client-go's klog output through herald's logger.
	// klog's logger is process-wide, so only main sets it: tests that run
	// herald in-process beside their own clients leave it alone.
	routeKlog bool
	// recordStartOvers counts a start-over in the environment the next
	// term is executed with (startover.go); only main, which executes it.
	recordStartOvers bool
	// bufferLogs batches herald run's log lines into fewer writes
	// (internal/logbuf). Only main: tests that run herald in-process read
	// its log as it is written.
	bufferLogs bool
}

// runMain runs a subcommand as tests do, without touching process-wide
// state.
func runMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return cli{stdout: stdout, stderr: stderr}.run(ctx, args)
}

// run dispatches a subcommand and returns the process exit code.
func (c cli) run(ctx context.Context, args []string) int {
	stdout, stderr := c.stdout, c.stderr
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "run":
		return c.cmdRun(ctx, args[1:])
	case "test":
		return c.cmdTest(ctx, args[1:])
	case "validate":
		return cmdValidate(args[1:], stdout, stderr)
	case "incidents":
		return c.cmdIncidents(ctx, args[1:])
	case "silence", "silences":
		return c.cmdSilence(ctx, args[1:])
	case "healthcheck":
		return cmdHealthcheck(ctx, args[1:], stdout, stderr)
	case "version", "--version":
		fs := flag.NewFlagSet("herald version", flag.ContinueOnError)
		if code, ok := parseNoArgs(fs, "herald version", args[1:], stdout, stderr); !ok {
			return code
		}
		fmt.Fprintln(stdout, versionLine())
		return 0
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "herald: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
}
