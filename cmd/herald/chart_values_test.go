package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/herald-k8s/herald/config"
)

// chartDefaultRules are the rules the chart's values.yaml turns on
// (charts/herald/README.md#default-rules).
var chartDefaultRules = []string{
	"pod-crashloop", "pod-oomkilled", "pod-image-pull", "pod-config-error", "pod-evicted", "pod-pending",
	"rollout-stuck", "deployment-unavailable", "hpa-max-replicas", "job-failed", "cronjob-missed", "node-not-ready", "node-pressure", "cert-expiring",
}

// loadRendered validates a configuration the chart rendered as herald
// validate --offline does (secret files are listed, not read: the test
// has no Secrets mounted) and returns it.
func loadRendered(t *testing.T, rendered string) *config.Config {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(rendered), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, _, err := compileConfig(path, config.LoadOffline)
	if err != nil {
		t.Fatalf("the rendered configuration does not validate:\n%v\n%s", err, rendered)
	}
	return cfg
}

func ruleNames(cfg *config.Config) []string {
	var names []string
	for _, r := range cfg.Rules {
		names = append(names, r.Name)
	}
	return names
}

func sinkNamed(t *testing.T, cfg *config.Config, name string) *config.Sink {
	t.Helper()
	for i := range cfg.Sinks {
		if cfg.Sinks[i].Name == name {
			return &cfg.Sinks[i]
		}
	}
	t.Fatalf("no sink %q in %v", name, cfg.Sinks)
	return nil
}

// TestChartValuesRenderValidConfig renders the chart with its top-level
// values (clusterName, slack.channel, defaultSinks, extraRules, routes) and
// checks that each lands where it should in a configuration herald
// accepts.
func TestChartValuesRenderValidConfig(t *testing.T) {
	beside(t)
	for _, tt := range []struct {
		name  string
		args  []string
		check func(t *testing.T, cfg *config.Config)
	}{
		{"defaults", nil, func(t *testing.T, cfg *config.Config) {
			if got := ruleNames(cfg); !slices.Equal(got, chartDefaultRules) {
				t.Errorf("rules %v, want %v", got, chartDefaultRules)
			}
			for _, r := range cfg.Rules {
				if !slices.Equal(r.Sinks, []string{"slack"}) {
					t.Errorf("rule %s notifies %v, want defaultSinks [slack]", r.Name, r.Sinks)
				}
			}
			if ch := sinkNamed(t, cfg, "slack").Slack.Channel; ch != "#alerts" {
				t.Errorf("slack channel %q, want slack.channel's default #alerts", ch)
			}
			if cfg.ClusterName != "" || len(cfg.Routes) != 0 {
				t.Errorf("clusterName %q, routes %v: want none by default", cfg.ClusterName, cfg.Routes)
			}
		}},
		{"volumeStats", []string{"--set", "volumeStats.enabled=true", "--set", "volumeStats.threshold=70", "--set", "volumeStats.horizon=6h", "--set", "volumeStats.interval=2m",
			"--set-json", `volumeStats.rule={"window":"2h","namespaces":{"exclude":["scratch"]}}`, "--set-json", `config.volumeStats={"timeout":"5s"}`}, func(t *testing.T, cfg *config.Config) {
			r := cfg.Rules[len(cfg.Rules)-1]
			if r.Name != "volume-filling" || r.Detector != "volume-filling" || r.Threshold != 70 || r.Critical != 90 || r.Horizon == nil || *r.Horizon != 6*time.Hour || !slices.Equal(r.Sinks, []string{"slack"}) ||
				r.Window != 2*time.Hour || !slices.Equal(r.Namespaces.Exclude, []string{"scratch"}) {
				t.Errorf("the volume-filling rule: %+v", r)
			}
			if v := cfg.VolumeStats; v.Interval != 2*time.Minute || v.Concurrency != 4 || v.Timeout != 5*time.Second {
				t.Errorf("volumeStats %+v, want interval 2m (values), concurrency 4, timeout 5s (config's own)", v)
			}
		}},
		{"extraRules, routes, clusterName, slack.channel", []string{
			"--set", "clusterName=prod-eu", "--set", "slack.channel=#ops",
			"--set-json", `extraRules=[{"name":"sts-unavailable","kind":"StatefulSet","detector":"unavailable","for":"15m"},{"name":"pod-failed","kind":"Pod","detector":"pod-failed","sinks":["slack"]}]`,
			"--set-json", `routes=[{"name":"payments","match":{"teams":["payments"],"namespaceLabels":"team=payments"},"to":[{"sink":"slack","channel":"#payments","mention":["S0123ABCDE"]}],"continue":true},{"name":"everyone-else","to":[{"sink":"slack"}]}]`,
		}, func(t *testing.T, cfg *config.Config) {
			want := append(slices.Clone(chartDefaultRules), "sts-unavailable", "pod-failed")
			if got := ruleNames(cfg); !slices.Equal(got, want) {
				t.Errorf("rules %v, want the defaults and then extraRules: %v", got, want)
			}
			if last := cfg.Rules[len(cfg.Rules)-2]; last.Kind != "StatefulSet" || !slices.Equal(last.Sinks, []string{"slack"}) || last.For == nil || last.For.String() != "15m0s" {
				t.Errorf("extra rule %+v: want kind StatefulSet, for 15m, defaultSinks [slack]", last)
			}
			if cfg.ClusterName != "prod-eu" || sinkNamed(t, cfg, "slack").Slack.ClusterName != "prod-eu" {
				t.Errorf("clusterName %q (slack sink's %q), want prod-eu", cfg.ClusterName, sinkNamed(t, cfg, "slack").Slack.ClusterName)
			}
			if ch := sinkNamed(t, cfg, "slack").Slack.Channel; ch != "#ops" {
				t.Errorf("slack channel %q, want slack.channel #ops", ch)
			}
			if len(cfg.Routes) != 2 || cfg.Routes[0].Name != "payments" || !cfg.Routes[0].Continue ||
				!slices.Equal(cfg.Routes[0].To[0].Mention, []string{"S0123ABCDE"}) || cfg.Routes[0].Match.NamespaceLabels != "team=payments" || !cfg.HasCatchAll() {
				t.Errorf("routes %+v, want payments (continue) then a catch-all", cfg.Routes)
			}
		}},
		{"a sink's own channel wins over slack.channel", []string{
			"--set", "slack.channel=#other",
			"--set-json", `config.sinks=[{"name":"slack","slack":{"token":{"file":"/var/run/secrets/herald/slack/token"},"channel":"#own"}}]`,
		}, func(t *testing.T, cfg *config.Config) {
			if ch := sinkNamed(t, cfg, "slack").Slack.Channel; ch != "#own" {
				t.Errorf("slack channel %q, want the sink's own #own", ch)
			}
		}},
		{"defaultSinks [] leaves the rules to a catch-all route", []string{
			"--set-json", "defaultSinks=[]", "--set-json", `routes=[{"name":"all","to":[{"sink":"slack"}]}]`,
		}, func(t *testing.T, cfg *config.Config) {
			for _, r := range cfg.Rules {
				if len(r.Sinks) != 0 {
					t.Errorf("rule %s notifies %v, want no sinks of its own", r.Name, r.Sinks)
				}
			}
			if !cfg.HasCatchAll() {
				t.Error("no catch-all route")
			}
		}},
		{"slack.interactive: buttons on the slack sink, the allow list as given", []string{
			"--set", "slack.interactive.enabled=true",
			"--set-json", `routes=[{"name":"shop","match":{"namespaces":["shop-*"]},"to":[{"sink":"slack"}]},{"name":"all","to":[{"sink":"slack"}]}]`,
			"--set-json", `slack.interactive.allow=[{"namespaces":["shop-*"],"routes":["shop"],"silence":["S0ONCALL1","U0ANA123"]},{"acknowledge":["S0ONCALL1"]}]`,
		}, func(t *testing.T, cfg *config.Config) {
			in := sinkNamed(t, cfg, "slack").Slack.Interactive
			if in == nil || in.AppToken == nil || in.AppToken.File != "/var/run/secrets/herald/slack-interactive/app-token" {
				t.Fatalf("interactive %+v: want the app-level token from the chart's mount", in)
			}
			for _, c := range []struct {
				action, namespace, route string
				want                     []string
			}{
				{"silence", "shop-eu", "shop", []string{"S0ONCALL1", "U0ANA123"}},
				{"silence", "shop-eu", "all", nil}, // the second entry leaves silencing to the default: nobody
				{"acknowledge", "shop-eu", "shop", []string{"*"}},
				{"acknowledge", "batch", "all", []string{"S0ONCALL1"}},
				{"moreLogs", "batch", "all", []string{"*"}},
			} {
				if got := in.Allowed(c.action, c.namespace, []string{c.route}); !slices.Equal(got, c.want) {
					t.Errorf("%s in %s by route %s: %v, want %v", c.action, c.namespace, c.route, got, c.want)
				}
			}
		}},
		{"config.clusterName wins over clusterName", []string{"--set", "clusterName=prod-eu", "--set", "config.clusterName=prod-eu-2"}, func(t *testing.T, cfg *config.Config) {
			if cfg.ClusterName != "prod-eu-2" {
				t.Errorf("clusterName %q, want config's prod-eu-2", cfg.ClusterName)
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.check(t, loadRendered(t, renderChart(t, tt.args...)))
		})
	}
}

// TestChartExampleValues renders the chart with every values file under
// examples/chart and validates the configuration each ships; helm lint
// --strict with each is internal/chart's TestLint.
func TestChartExampleValues(t *testing.T) {
	beside(t)
	checks := map[string]func(t *testing.T, cfg *config.Config){
		"values.yaml": func(t *testing.T, cfg *config.Config) {
			if got := ruleNames(cfg); !slices.Equal(got, chartDefaultRules) {
				t.Errorf("rules %v, want the chart's defaults", got)
			}
		},
		"team-routing.yaml": func(t *testing.T, cfg *config.Config) {
			var names []string
			for _, r := range cfg.Routes {
				names = append(names, r.Name)
			}
			if want := []string{"payments-page", "payments", "search"}; !slices.Equal(names, want) {
				t.Fatalf("routes %v, want %v", names, want)
			}
			page, pay, search := cfg.Routes[0], cfg.Routes[1], cfg.Routes[2]
			if !page.Continue || !slices.Equal(page.Match.Teams, []string{"payments"}) || page.To[0].Sink != "pagerduty" || page.To[0].Destination != "payments" {
				t.Errorf("payments-page %+v: want payments' critical alerts to PagerDuty destination payments, continuing", page)
			}
			if pay.To[0].Channel != "#payments-alerts" || len(pay.To[0].Mention) != 1 || search.Match.NamespaceLabels != "team=search" || search.To[0].Channel != "#search-alerts" {
				t.Errorf("payments %+v, search %+v: want each team its channel and mention", pay, search)
			}
			if _, ok := sinkNamed(t, cfg, "pagerduty").PagerDuty.Destinations["payments"]; !ok {
				t.Error("the pagerduty sink has no destination payments")
			}
			if ch := sinkNamed(t, cfg, "slack").Slack.Channel; ch != "#platform-alerts" {
				t.Errorf("default channel %q, want #platform-alerts", ch)
			}
		},
		"pagerduty-only.yaml": func(t *testing.T, cfg *config.Config) {
			if len(cfg.Sinks) != 1 || cfg.Sinks[0].PagerDuty == nil {
				t.Fatalf("sinks %v, want one pagerduty sink", cfg.Sinks)
			}
			for _, r := range cfg.Rules {
				if !slices.Equal(r.Sinks, []string{"pagerduty"}) {
					t.Errorf("rule %s notifies %v, want [pagerduty]", r.Name, r.Sinks)
				}
			}
			if cfg.Sinks[0].PagerDuty.ClusterName != "prod-us" {
				t.Errorf("pagerduty clusterName %q, want prod-us", cfg.Sinks[0].PagerDuty.ClusterName)
			}
		},
		"multi-cluster.yaml": func(t *testing.T, cfg *config.Config) {
			slack := sinkNamed(t, cfg, "slack").Slack
			if cfg.ClusterName != "prod-eu" || slack.ClusterName != "prod-eu" || slack.Channel != "#k8s-alerts" {
				t.Errorf("clusterName %q, slack %q in %q: want prod-eu in #k8s-alerts", cfg.ClusterName, slack.ClusterName, slack.Channel)
			}
			if got := ruleNames(cfg); got[len(got)-1] != "statefulset-unavailable" || len(got) != len(chartDefaultRules)+1 {
				t.Errorf("rules %v, want the defaults and statefulset-unavailable", got)
			}
		},
	}
	files, err := filepath.Glob("../../examples/chart/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no example values files: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			check, ok := checks[filepath.Base(file)]
			if !ok {
				t.Fatalf("%s has no check here: say what it must render", file)
			}
			check(t, loadRendered(t, renderChart(t, "-f", file)))
		})
	}
}
