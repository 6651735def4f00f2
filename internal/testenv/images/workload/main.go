// Command workload is the test node's one application image (tagged
// herald.test/workload:1 and :2). Its flags make it behave as the failure
// at hand needs: log some lines, exit with a code, grow past its memory
// limit, serve a readiness endpoint, or crash when a file it reads says
// so or once a time has passed.
//
//	workload -log "starting,config: bad value" -exit 1
//	workload -alloc-mb 256
//	workload -ready-port 8080
//	workload -fail-first 3 -state /state/starts -exit 1 -ready-port 8080
//	workload -fail-if-file /config/mode -containing broken
//	workload -crash-after 62s -state /state/first-start
//
// -fail-first makes a crash loop that recovers: the first N starts (counted
// in -state, on a volume that outlives the container) exit with -exit,
// later ones run.
//
// -fail-if-file makes a crash that follows a change of what the pod reads
// (a ConfigMap volume): the file is read at start and every 500 ms, and
// once it contains -containing the program says so and exits 1.
//
// -crash-after makes a crash that follows no change at all: the first
// start writes its time to -state (on a volume that outlives the
// container), the program exits 1 once the duration has passed since
// then, and every later start past that moment exits 1 at once, so the
// pod crash-loops.
package main

import (
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	logLines := flag.String("log", "", "lines to print at start, separated by commas")
	exitCode := flag.Int("exit", -1, "exit with this code after -after (default: run until stopped)")
	after := flag.Duration("after", 0, "how long to run before exiting with -exit")
	allocMB := flag.Int("alloc-mb", 0, "allocate and touch this many MiB, 1 MiB at a time")
	readyPort := flag.Int("ready-port", 0, "serve GET /ready on this port")
	failFirst := flag.Int("fail-first", 0, "exit with -exit on only the first N starts (counted in -state), run after")
	state := flag.String("state", "", "file counting the starts (-fail-first) or holding the first start's time (-crash-after)")
	failIfFile := flag.String("fail-if-file", "", "exit 1 once this file contains -containing (read at start and every 500 ms)")
	containing := flag.String("containing", "", "what -fail-if-file waits for")
	crashAfter := flag.Duration("crash-after", 0, "exit 1 once this long has passed since the first start (kept in -state)")
	flag.Parse()

	if *failIfFile != "" {
		go failWhenFileSays(*failIfFile, *containing)
	}
	if *crashAfter > 0 {
		first, err := firstStart(*state)
		if err != nil {
			fmt.Fprintln(os.Stderr, "state:", err)
			os.Exit(2)
		}
		go func() {
			time.Sleep(time.Until(first.Add(*crashAfter)))
			fmt.Printf("%s since the first start (%s): exiting\n", *crashAfter, first.Format(time.RFC3339))
			os.Exit(1)
		}()
	}

	if *failFirst > 0 {
		starts := 0
		if b, err := os.ReadFile(*state); err == nil {
			starts, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
		starts++
		if err := os.WriteFile(*state, []byte(strconv.Itoa(starts)), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "state:", err)
			os.Exit(2)
		}
		if starts > *failFirst {
			*exitCode = -1 // recovered: run until stopped
			fmt.Printf("start %d: recovered\n", starts)
		}
	}

	if *logLines != "" {
		for _, line := range strings.Split(*logLines, ",") {
			fmt.Println(line)
		}
	}
	if *readyPort > 0 {
		go func() {
			http.HandleFunc("/ready", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
			if err := http.ListenAndServe(fmt.Sprintf(":%d", *readyPort), nil); err != nil {
				fmt.Fprintln(os.Stderr, "ready endpoint:", err)
			}
		}()
	}
	var hoard [][]byte
	for i := range *allocMB {
		chunk := make([]byte, 1<<20)
		for j := range chunk { // touch every page: untouched pages cost no memory
			chunk[j] = byte(i)
		}
		hoard = append(hoard, chunk)
		if i%32 == 31 {
			fmt.Printf("allocated %d MiB\n", i+1)
		}
	}
	if *exitCode >= 0 {
		time.Sleep(*after)
		os.Exit(*exitCode)
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	<-stop
	_ = hoard
}

// failWhenFileSays exits 1 once path contains what; a file that cannot
// be read yet is read again.
func failWhenFileSays(path, what string) {
	for {
		if b, err := os.ReadFile(path); err == nil && strings.Contains(string(b), what) {
			fmt.Printf("%s contains %q: exiting\n", path, what)
			os.Exit(1)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// firstStart returns the time of the container's first start, kept in
// path: written by the first start, read by every later one.
func firstStart(path string) (time.Time, error) {
	if b, err := os.ReadFile(path); err == nil {
		return time.Parse(time.RFC3339Nano, strings.TrimSpace(string(b)))
	}
	now := time.Now()
	return now, os.WriteFile(path, []byte(now.Format(time.RFC3339Nano)), 0o644)
}
