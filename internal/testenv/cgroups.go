package testenv

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const cgroupMount = "/sys/fs/cgroup"

// cgroupHierarchies lists the mounted cgroup hierarchies: one directory
// per v1 controller (these VMs), or the single v2 tree.
func cgroupHierarchies() ([]string, error) {
	if _, err := os.Stat(filepath.Join(cgroupMount, "cgroup.controllers")); err == nil {
		return []string{cgroupMount}, nil // cgroup v2 only
	}
	entries, err := os.ReadDir(cgroupMount)
	if err != nil {
		return nil, err
	}
	var dirs []string
	for _, e := range entries {
		if e.IsDir() && !strings.Contains(e.Name(), ",") { // cpu,cpuacct is a link to cpu and cpuacct
			dirs = append(dirs, filepath.Join(cgroupMount, e.Name()))
		}
	}
	return dirs, nil
}

// prepareCgroupRoot creates the node's own cgroup root (the kubelet's
// cgroupRoot) in every hierarchy, so that two test nodes never share
// kubepods: a kubelet removes pod cgroups it does not know.
func prepareCgroupRoot(name string) error {
	dirs, err := cgroupHierarchies()
	if err != nil {
		return err
	}
	for _, h := range dirs {
		dir := filepath.Join(h, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("creating cgroup %s: %w", dir, err)
		}
		// A new v1 cpuset starts with no CPUs and no memory nodes, and
		// nothing can join it; give it its parent's.
		if filepath.Base(h) == "cpuset" {
			for _, file := range []string{"cpuset.cpus", "cpuset.mems"} {
				v, err := os.ReadFile(filepath.Join(h, file))
				if err != nil {
					return err
				}
				if err := os.WriteFile(filepath.Join(dir, file), v, 0o644); err != nil {
					return fmt.Errorf("%s/%s: %w", dir, file, err)
				}
			}
		}
	}
	return nil
}

// removeCgroupRoot kills whatever still runs under the node's cgroup root
// and removes its cgroups, deepest first, in every hierarchy.
func removeCgroupRoot(name string) error {
	dirs, err := cgroupHierarchies()
	if err != nil {
		return err
	}
	var left []string
	for _, h := range dirs {
		root := filepath.Join(h, name)
		var tree []string
		filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				tree = append(tree, path)
			}
			return nil
		})
		slices.Reverse(tree) // children before parents
		for _, dir := range tree {
			if err := removeCgroup(dir); err != nil {
				left = append(left, err.Error())
			}
		}
	}
	if len(left) > 0 {
		return fmt.Errorf("test node cgroups left behind: %s", strings.Join(left, "; "))
	}
	return nil
}

// removeCgroup kills the processes in one cgroup and removes it; a killed
// process leaves its cgroup a moment after the signal.
func removeCgroup(dir string) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		procs, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		for _, f := range strings.Fields(string(procs)) {
			if pid, err := strconv.Atoi(f); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		err := syscall.Rmdir(dir)
		if err == nil || os.IsNotExist(err) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: %w", dir, err)
		}
		time.Sleep(50 * time.Millisecond) // the kernel frees a cgroup when its last task has exited
	}
}
