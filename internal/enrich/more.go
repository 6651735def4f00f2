package enrich

import (
	"context"
	"errors"

	"github.com/herald-k8s/herald/internal/incident"
)

// MaxMoreLines bounds what "More logs" fetches: a thread reply an on-call
// person reads, not a log viewer.
const MaxMoreLines = 100

// ErrNoLogs says an incident has no container log to show: it is not
// about a pod's container, its rule turned logs off, or herald may not
// read logs.
var ErrNoLogs = errors.New("no container log to show")

// ErrBudget says the context stage's request budget is spent for now.
var ErrBudget = errors.New("over herald's budget of API requests for context; try again in a moment")

// MoreLogs fetches up to lines (at most MaxMoreLines) of the crashed
// container's log, redacted as the alert's own lines are, within the
// stage's request budget and wait bound; the bytes read are bounded by
// the configured log bytes scaled to the lines asked for.
func (e *Enricher) MoreLogs(ctx context.Context, inc incident.Incident, lines int) (*incident.Logs, error) {
	if inc.NoLogs || inc.Container == "" || len(inc.Members) == 0 || !e.opts.Logs {
		if !e.opts.Logs && e.opts.LogsUnavailable != "" {
			return nil, errors.New(e.opts.LogsUnavailable)
		}
		return nil, ErrNoLogs
	}
	kind, ns, pod := splitKey(inc.Members[0])
	if kind != "Pod" {
		return nil, ErrNoLogs
	}
	lines = min(max(lines, 1), MaxMoreLines)
	if !e.limiter.Allow() {
		return nil, ErrBudget
	}
	ctx, cancel := context.WithTimeout(ctx, e.opts.Wait)
	defer cancel()
	logs, err := e.crashedLog(ctx, inc, ns, pod, lines, e.opts.MaxBytes*max(1, lines/max(1, e.opts.Lines)))
	if err != nil {
		return nil, errors.New(e.explain("logs", err))
	}
	return logs, nil
}
