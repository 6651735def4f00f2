// Command workload is the test node's one application image. Its flags
// make it behave as the failure at hand needs: log some lines, exit with
// a code, grow past its memory limit, or serve a readiness endpoint.
//
//	workload -log "starting,config: bad value" -exit 1
//	workload -alloc-mb 256
//	workload -ready-port 8080
//	workload -fail-first 3 -state /state/starts -exit 1 -ready-port 8080
//
// -fail-first makes a crash loop that recovers: the first N starts (counted
// in -state, on a volume that outlives the container) exit with -exit,
// later ones run.
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
	state := flag.String("state", "", "file counting the starts, for -fail-first")
	flag.Parse()

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
