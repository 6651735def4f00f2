package testenv

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// process is one child program with its log file.
type process struct {
	cmd     *exec.Cmd
	logPath string
	exited  chan struct{}
	waitErr error
	once    sync.Once
}

func startProcess(bin, logPath string, args ...string) (*process, error) {
	return startProcessWithEnv(bin, logPath, nil, args...)
}

// startProcessWithEnv is startProcess with env added to the inherited
// environment.
func startProcessWithEnv(bin, logPath string, env []string, args ...string) (*process, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setpgid: true,
		// If the test binary dies without running its cleanups, the
		// kernel kills the child instead of leaving an orphan.
		Pdeathsig: syscall.SIGKILL,
	}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	p := &process{cmd: cmd, logPath: logPath, exited: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		logFile.Close()
		close(p.exited)
	}()
	return p, nil
}

// stop sends SIGTERM, then SIGKILL after 10 s, and waits for the exit.
func (p *process) stop() {
	if p == nil {
		return
	}
	p.once.Do(func() {
		p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(10 * time.Second):
			p.cmd.Process.Kill()
			<-p.exited
		}
	})
}

// tail returns the last n lines of the process's log, labelled.
func (p *process) tail(n int) string {
	if p == nil {
		return ""
	}
	data, _ := os.ReadFile(p.logPath)
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return fmt.Sprintf("--- last lines of %s:\n%s", filepath.Base(p.logPath), bytes.Join(lines, []byte("\n")))
}
