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
// that does this one thing. It exits 0 only on a 200 answer; with --wait
// it asks again every second until one comes or the wait is over (a
// fresh install is ready once its caches have synced).
func cmdHealthcheck(ctx context.Context, args []string, out, errOut io.Writer) int {
	fs := flag.NewFlagSet("herald healthcheck", flag.ContinueOnError)
	target := fs.String("url", "http://127.0.0.1:8080/readyz", "herald's /readyz (or /healthz) URL")
	timeout := fs.Duration("timeout", 5*time.Second, "how long to wait for each answer")
	waitFor := fs.Duration("wait", 0, "ask again every second until herald is ready or this long has passed (0: ask once)")
	const synopsis = "herald healthcheck [--url http://HOST:PORT/readyz] [--timeout 5s] [--wait 2m]"
	if code, ok := parseNoArgs(fs, synopsis, args, out, errOut); !ok {
		return code
	}
	u, err := url.Parse(*target)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		fmt.Fprintf(errOut, "herald healthcheck: --url %q: want http://HOST:PORT/readyz\n", *target)
		return 2
	}
	deadline := time.Now().Add(*waitFor)
	for {
		code, msg := check(ctx, u, *timeout)
		if code == 0 {
			fmt.Fprintln(out, msg)
			return 0
		}
		if code == 2 || !time.Now().Add(time.Second).Before(deadline) {
			fmt.Fprintln(errOut, "herald healthcheck: "+msg)
			return code
		}
		select {
		case <-ctx.Done():
			fmt.Fprintln(errOut, "herald healthcheck: "+msg)
			return code
		case <-time.After(time.Second):
		}
	}
}

// check asks once: 0 and the status on a 200 answer, else 1 (or 2 for a
// request that cannot be made) and why.
func check(ctx context.Context, u *url.URL, timeout time.Duration) (int, string) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return 2, err.Error()
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 1, fmt.Sprintf("%s: %v", u.Redacted(), err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	if resp.StatusCode != http.StatusOK {
		return 1, fmt.Sprintf("%s answered %s: %s", u.Redacted(), cleanLine([]byte(resp.Status)), cleanLine(body))
	}
	return 0, fmt.Sprintf("%s: %s", u.Redacted(), cleanLine([]byte(resp.Status)))
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
