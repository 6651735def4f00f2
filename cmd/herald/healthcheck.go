package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// cmdHealthcheck asks a running herald whether it is ready (its /readyz,
// or /healthz): the image has no shell and no curl, and the chart's
// `helm test` hook and a container runtime's health check need a command
// that does this one thing. It exits 0 only on a 200 answer.
func cmdHealthcheck(ctx context.Context, args []string, out, errOut io.Writer) int {
	fs := flag.NewFlagSet("herald healthcheck", flag.ContinueOnError)
	target := fs.String("url", "http://127.0.0.1:8080/readyz", "herald's /readyz (or /healthz) URL")
	timeout := fs.Duration("timeout", 5*time.Second, "how long to wait for the answer")
	const synopsis = "herald healthcheck [--url http://HOST:PORT/readyz] [--timeout 5s]"
	if code, ok := parseNoArgs(fs, synopsis, args, out, errOut); !ok {
		return code
	}
	u, err := url.Parse(*target)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		fmt.Fprintf(errOut, "herald healthcheck: --url %q: want http://HOST:PORT/readyz\n", *target)
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		fmt.Fprintf(errOut, "herald healthcheck: %v\n", err)
		return 2
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintf(errOut, "herald healthcheck: %s: %v\n", u.Redacted(), err)
		return 1
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(errOut, "herald healthcheck: %s answered %s: %s\n", u.Redacted(), resp.Status, cleanLine(body))
		return 1
	}
	fmt.Fprintf(out, "%s: %s\n", u.Redacted(), resp.Status)
	return 0
}

// cleanLine keeps what a terminal may print of a body: printable ASCII,
// newlines turned to spaces.
func cleanLine(b []byte) string {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		switch {
		case c == '\n' || c == '\t':
			out = append(out, ' ')
		case c >= 0x20 && c < 0x7f:
			out = append(out, c)
		}
	}
	return string(out)
}
