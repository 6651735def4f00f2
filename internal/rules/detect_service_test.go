package rules

import (
	"strings"
	"testing"
	"time"
)

// endpointsOf is a cache of Services' endpoints and selected workloads.
type endpointsOf struct {
	ready, notReady map[string]int // by Service name; absent: no slice
	workloads       []string
}

func (e endpointsOf) Endpoints(_, service string) (int, int, bool) {
	r, ok1 := e.ready[service]
	n, ok2 := e.notReady[service]
	return r, n, ok1 || ok2
}

func (e endpointsOf) SelectedWorkloads(string, map[string]string) []string { return e.workloads }

// TestNoEndpoints: a Service with a selector and no ready endpoint fires
// (its not-ready pods counted, or none selected at all), naming the
// workloads it sends to; one with a ready endpoint, without a selector,
// of type ExternalName, annotated as empty on purpose, or whose slices
// herald does not have yet, does not.
func TestNoEndpoints(t *testing.T) {
	for _, tt := range []struct {
		name, file string
		cache      endpointsOf
		want       string // "" none; else words the detail must hold
	}{
		{"not ready", "svc-web.yaml", endpointsOf{ready: map[string]int{"web": 0}, notReady: map[string]int{"web": 3}, workloads: []string{"Deployment/web"}}, "no ready endpoint: 3 pods not ready"},
		{"none selected", "svc-web.yaml", endpointsOf{ready: map[string]int{"web": 0}}, "no running pod matches its selector app=web,tier=frontend"},
		{"one ready", "svc-web.yaml", endpointsOf{ready: map[string]int{"web": 1}, notReady: map[string]int{"web": 2}}, ""},
		{"no slice yet", "svc-web.yaml", endpointsOf{}, ""},
		{"no selector", "svc-no-selector.yaml", endpointsOf{ready: map[string]int{"external-db": 0}}, ""},
		{"external name", "svc-externalname.yaml", endpointsOf{ready: map[string]int{"payments": 0}}, ""},
		{"expected empty", "svc-expected-empty.yaml", endpointsOf{ready: map[string]int{"batch-ui": 0}}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			set := compile(t, ruleYAML("Service", "no-endpoints", ""))
			set.UseRelated(tt.cache)
			got, errs := set.Evaluate("Service", loadObject(t, tt.file), now, nil)
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			switch {
			case tt.want == "" && len(got) != 0:
				t.Errorf("fired: %+v", got)
			case tt.want != "" && (len(got) != 1 || got[0].Reason != "NoReadyEndpoints" || !strings.Contains(got[0].Text, tt.want)):
				t.Errorf("got %+v, want NoReadyEndpoints saying %q", got, tt.want)
			case tt.want != "" && got[0].For != 5*time.Minute:
				t.Errorf("for %s, want the default 5m", got[0].For)
			}
			if len(got) == 1 && len(tt.cache.workloads) > 0 && (got[0].Facts["workloads"] != "Deployment/web" || !strings.Contains(got[0].Text, "it sends to Deployment/web")) {
				t.Errorf("the workloads it sends to: %v, %q", got[0].Facts, got[0].Text)
			}
		})
	}
	// Without the cache's lookups (herald test on files), nothing.
	set := compile(t, ruleYAML("Service", "no-endpoints", ""))
	if got, _ := set.Evaluate("Service", loadObject(t, "svc-web.yaml"), now, nil); len(got) != 0 {
		t.Errorf("no lookups, yet: %+v", got)
	}
	if k := strings.Join(set.Kinds(), ","); k != "EndpointSlice,Service" {
		t.Errorf("kinds %s: the slices must be watched with the Services", k)
	}
}
