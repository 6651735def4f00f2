package handlers

import (
	"log/slog"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-k8s/herald/internal/links"
	"github.com/herald-k8s/herald/internal/rules"
	"github.com/herald-k8s/herald/watcher"
)

// fillLinks fills each finding's links (its rule's, then its routes'):
// the reconcile loop knows what the rules do not, the object's workload,
// and the time. m is nil for a finding with no object in the cache (an
// alert from outside): its links get the names the alert gave.
func (c *Controller) fillLinks(m metav1.Object, findings []rules.Finding) {
	now := c.Now()
	for i := range findings {
		f := &findings[i]
		if len(f.RuleLinks) == 0 && len(f.RouteLinks) == 0 {
			continue
		}
		d := links.Data{
			Cluster: c.ClusterName, Namespace: f.Object.Namespace, Kind: f.Object.Kind, Name: f.Object.Name,
			Container: f.Container, Rule: f.Rule, Reason: f.Reason, Severity: f.Severity,
		}
		switch {
		case f.Group != nil:
			// A grouped incident is about its workload: its links are
			// the same whichever pod was looked at last.
			d.WorkloadKind, d.WorkloadName = f.Group.Kind, f.Group.Name
			d.Kind, d.Name = f.Group.Kind, f.Group.Name
		case m != nil && f.Object.Kind == "Pod":
			d.WorkloadKind, d.WorkloadName = watcher.Workload(m)
		default:
			d.WorkloadKind, d.WorkloadName = f.Object.Kind, f.Object.Name
		}
		d.Workload = d.WorkloadKind + "/" + d.WorkloadName
		if m != nil {
			d.Labels = m.GetLabels()
		}
		var errs []error
		f.Links, errs = links.Render(d.Window(f.Since, now), append([]links.Set{f.RuleLinks}, f.RouteLinks...)...)
		for _, err := range errs {
			// The notification goes without the link; the log says why,
			// once a minute per rule.
			c.Metrics.LinkErrors.WithLabelValues(f.Rule).Inc()
			if n, ok := c.ruleErrs.Allow("links/" + f.Rule); ok {
				c.Logger.Warn("a link left out of a notification", "rule", f.Rule, "object", f.Object.Namespace+"/"+f.Object.Name, "error", err, slog.Int("failuresSinceLastLog", n))
			}
		}
	}
}
