package main

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
)

// silenceScene mutes a known problem with herald silence create: the
// crash loop under it says nothing until the silence ends, then fires
// once with what it is then.
func silenceScene(ctx context.Context, client kubernetes.Interface, heraldBin, kubeconfig string, lines <-chan string, seen func([]string)) error {
	const length = 25 * time.Second
	say("a known problem: the team is fixing batch and silences it for %s first: herald silence create --namespace %s --workload batch --for %s --comment ...", length, ns, length)
	cmd := exec.Command(heraldBin, "silence", "create", "--kubeconfig", kubeconfig, "--namespace", ns, "--workload", "batch",
		"--for", length.String(), "--comment", "fixing the schema migration")
	out, err := cmd.CombinedOutput()
	fmt.Printf("    %s", out)
	if err != nil {
		return fmt.Errorf("herald silence create: %w", err)
	}
	m := regexp.MustCompile(`mutes until (\S+)`).FindSubmatch(out)
	if m == nil {
		return fmt.Errorf("herald silence create said %q", out)
	}
	ends, err := time.Parse(time.RFC3339, string(m[1]))
	if err != nil {
		return err
	}
	list, err := exec.Command(heraldBin, "silence", "list", "--kubeconfig", kubeconfig).CombinedOutput()
	fmt.Printf("    %s", strings.ReplaceAll(strings.TrimRight(string(list), "\n"), "\n", "\n    ")+"\n")
	if err != nil {
		return fmt.Errorf("herald silence list: %w", err)
	}
	say("batch crash-loops under the silence: expect nothing about it until the silence ends, then one FIRING")
	if err := createDeployment(ctx, client, "batch", 2, workload("-log", "ERROR relation \"orders_v2\" does not exist", "-exit", "1"), nil); err != nil {
		return err
	}
	if err := expectOnly(lines, seen, length+90*time.Second, "demo/batch", "FIRING"); err != nil {
		return err
	}
	if early := time.Until(ends); early > 0 {
		return fmt.Errorf("batch fired %s before its silence ended", early.Round(100*time.Millisecond))
	}
	say("batch fired %s after its silence ended: muted while the silence lasted, nothing lost", time.Since(ends).Round(100*time.Millisecond))
	return nil
}
