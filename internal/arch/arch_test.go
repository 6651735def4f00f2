// Package arch holds a test of the project's package rules (docs/architecture.md):
// the import graph follows the data flow, and no integration imports
// another.
package arch

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/herald-k8s/herald/internal/rules"
	"github.com/herald-k8s/herald/watcher"
)

const module = "github.com/herald-k8s/herald/"

// allowed lists, for each package, the project packages it may import.
// Beside the data flow's packages, three leaves (they import no project
// package) carry what cuts across it: internal/redact (secrets out of
// what the cluster wrote), internal/termsafe (terminal escapes out of
// it) and internal/fence (a deposed leader's requests stopped where they
// leave).
var allowed = map[string][]string{
	"config":                {},
	"watcher":               {},
	"internal/rules":        {"config", "internal/links", "internal/redact", "internal/termsafe"},
	"internal/links":        {"config"},
	"internal/volumes":      {"internal/rules"},
	"internal/kube":         {},
	"internal/incident":     {"internal/rules", "internal/kube", "internal/links"}, // the ledger's ConfigMaps
	"sinks":                 {"internal/incident", "internal/fence", "internal/links"},
	"sinks/webhook":         {"sinks", "internal/incident", "internal/fence"},
	"sinks/stdout":          {"sinks", "internal/incident", "internal/termsafe"},
	"sinks/slack":           {"sinks", "internal/incident", "internal/fence"},
	"sinks/nats":            {"sinks", "internal/incident", "internal/fence"},
	"sinks/alertmanager":    {"sinks", "internal/incident", "internal/links"},
	"sinks/pagerduty":       {"sinks", "internal/incident"},
	"sinks/teams":           {"sinks", "internal/incident"},
	"sinks/opsgenie":        {"sinks", "internal/incident"},
	"sinks/email":           {"sinks", "internal/incident", "internal/fence"},
	"handlers":              {"watcher", "internal/rules", "internal/incident", "internal/links", "internal/ratelog", "internal/route", "sinks"},
	"internal/route":        {"config", "internal/links", "internal/rules"},
	"internal/testenv":      {},
	"internal/natstest":     {},
	"internal/enrich":       {"internal/incident", "internal/kube", "internal/ratelog", "internal/redact", "watcher"},
	"internal/ratelog":      {},
	"internal/logbuf":       {},
	"internal/redact":       {},
	"internal/termsafe":     {},
	"internal/fence":        {},
	"internal/leader":       {"internal/fence"},
	"internal/silence":      {"config", "internal/incident", "watcher"},
	"internal/changes":      {"config", "watcher", "internal/incident", "internal/kube", "internal/preflight", "internal/redact"},
	"internal/actions":      {"internal/incident", "internal/silence"},
	"internal/slackact":     {"config", "internal/actions", "internal/incident", "internal/fence", "sinks", "sinks/slack"},
	"internal/slackstandin": {},
	"internal/preflight":    {"internal/kube", "watcher"},
	"internal/intake":       {"config", "internal/incident", "internal/ratelog", "internal/rules", "watcher"},
	"internal/term":         {"handlers", "internal/fence", "internal/incident", "sinks"},
	"internal/reload":       {"config", "handlers", "internal/route", "internal/rules", "internal/slackact"},
}

func TestImportGraph(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}:{{join .Imports " "}}`, module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imports, _ := strings.Cut(line, ":")
		name := strings.TrimPrefix(pkg, module)
		rules, ok := allowed[name]
		if !ok {
			continue // commands and helpers may import anything
		}
		for _, imp := range strings.Fields(imports) {
			dep, ours := strings.CutPrefix(imp, module)
			if ours && !slices.Contains(rules, dep) {
				t.Errorf("%s imports %s; it may import only %v", name, dep, rules)
			}
		}
	}
}

// TestBuiltinKindsAgree: the rules' list of built-in kinds and the
// watcher's list of their resources must name the same kinds at the same
// group/version, or a rule would ask for an informer the watcher cannot
// make.
func TestBuiltinKindsAgree(t *testing.T) {
	for kind, apiVersion := range rules.BuiltinKinds() {
		gvr, ok := watcher.Resource(kind)
		if !ok {
			t.Errorf("watcher has no resource for built-in kind %s", kind)
			continue
		}
		if got := gvr.GroupVersion().String(); got != apiVersion {
			t.Errorf("%s: rules say %s, watcher says %s", kind, apiVersion, got)
		}
	}
}
