package enrich

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/internal/kube"
	"github.com/herald-k8s/herald/internal/redact"
)

// Source is where context comes from: the API server (which proxies
// pods/log to the node's kubelet).
type Source interface {
	Logs(ctx context.Context, namespace, pod string, opts *corev1.PodLogOptions) ([]byte, error)
	Events(ctx context.Context, namespace, pod string) ([]corev1.Event, error)
}

// KubeSource reads context through the API server.
type KubeSource struct{ Client *kube.Client }

// Logs implements Source; it reads at most opts.LimitBytes (the kubelet
// honours it too).
func (k KubeSource) Logs(ctx context.Context, namespace, pod string, opts *corev1.PodLogOptions) ([]byte, error) {
	rc, err := k.Client.PodLogs(ctx, namespace, pod, opts)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(io.LimitReader(rc, *opts.LimitBytes))
}

// Events implements Source: one list by field selector, not a watch on
// every event of the cluster.
func (k KubeSource) Events(ctx context.Context, namespace, pod string) ([]corev1.Event, error) {
	sel := fields.Set{"involvedObject.kind": "Pod", "involvedObject.name": pod}.String()
	list, err := k.Client.ListEvents(ctx, namespace, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// fetchFactor: the kubelet cuts limitBytes from the start of the tail, so
// herald asks for more than it keeps and cuts from the top itself, keeping
// the newest lines.
const fetchFactor = 16

// gather collects the context of n's pod until ctx ends: logs and events
// at once, node and hint from what herald has.
func (e *Enricher) gather(ctx context.Context, n incident.Notification) *incident.Context {
	inc := n.Incident
	_, ns, pod := splitKey(inc.Members[0])
	c := &incident.Context{Hint: Hint(inc), Pod: ns + "/" + pod}
	var missing []string
	var mu sync.Mutex
	note := func(what string, err error) {
		mu.Lock()
		defer mu.Unlock()
		missing = append(missing, what+": "+e.explain(what, err))
	}
	var wg sync.WaitGroup
	wantLogs := !inc.NoLogs && inc.Container != "" && ranBefore(inc)
	if wantLogs && !e.opts.Logs && e.opts.LogsUnavailable != "" {
		missing = append(missing, "logs: "+e.opts.LogsUnavailable)
	}
	if wantLogs && e.opts.Logs {
		wg.Go(func() {
			logs, err := e.crashedLog(ctx, inc, ns, pod, e.opts.Lines, e.opts.MaxBytes)
			if err == nil {
				mu.Lock()
				c.Logs = logs
				mu.Unlock()
			}
			if err != nil {
				note("logs", err)
			}
		})
	}
	wg.Go(func() {
		var events []corev1.Event
		err := e.timed(ctx, "events", func(ctx context.Context) error {
			var err error
			events, err = e.opts.Source.Events(ctx, ns, pod)
			return err
		})
		if err != nil {
			note("events", err)
			return
		}
		picked := e.pick(events)
		mu.Lock()
		c.Events = picked
		mu.Unlock()
	})
	wg.Wait()
	if e.opts.PodNode != nil {
		if node := e.opts.PodNode(ns, pod); node != "" {
			c.Node = &incident.Node{Name: node}
			if e.opts.Node != nil {
				if cached := e.opts.Node(node); cached != nil {
					c.Node = cached
				}
			}
		}
	}
	slices.Sort(missing)
	c.Unavailable = strings.Join(missing, "; ")
	return c
}

// timed runs one request, counting it by kind and result.
func (e *Enricher) timed(ctx context.Context, kind string, do func(context.Context) error) error {
	start := e.opts.Now()
	err := do(ctx)
	e.opts.Metrics.Requests.WithLabelValues(kind, result(ctx, err)).Inc()
	e.opts.Metrics.Seconds.WithLabelValues(kind).Observe(e.opts.Now().Sub(start).Seconds())
	return err
}

func result(ctx context.Context, err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil || apierrors.IsTimeout(err):
		return "timeout"
	case apierrors.IsForbidden(err):
		return "forbidden"
	}
	return "error"
}

// explain says in a few words why part of the context is missing, and
// logs it once a minute per cause.
func (e *Enricher) explain(what string, err error) string {
	var why string
	switch result(context.Background(), err) {
	case "timeout":
		why = fmt.Sprintf("no answer within %s", e.opts.Wait)
	case "forbidden":
		why = "forbidden (herald's RBAC lacks " + map[string]string{"logs": "get pods/log", "events": "list events"}[what] + ")"
	default:
		why = "unavailable"
		if errors.Is(err, errLogGone) {
			why = "gone (the kubelet has already removed the crashed container)"
			break
		}
		var status apierrors.APIStatus
		if errors.As(err, &status) {
			why += " (" + strings.TrimSpace(strconv.Itoa(int(status.Status().Code))+" "+string(status.Status().Reason)) + ")"
		}
	}
	if _, ok := e.warn.Allow(what + why); ok {
		e.opts.Logger.Warn("crash context unavailable; notifications go out without it", "part", what, "why", why, "error", e.opts.Redactor.Redact(err.Error()))
	}
	return why
}

// pick keeps the most useful events: Warnings first, then the latest.
func (e *Enricher) pick(events []corev1.Event) []incident.Event {
	out := make([]incident.Event, 0, len(events))
	for _, ev := range events {
		last := ev.LastTimestamp.Time
		if !ev.EventTime.IsZero() && ev.EventTime.After(last) {
			last = ev.EventTime.Time
		}
		if ev.Series != nil && ev.Series.LastObservedTime.After(last) {
			last = ev.Series.LastObservedTime.Time
		}
		count := max(ev.Count, 1)
		if ev.Series != nil {
			count = max(count, ev.Series.Count)
		}
		// Bounded before it is redacted (an Event's message has no size
		// limit of its own), redacted before it is cut to size.
		msg := e.opts.Redactor.Redact(redact.Bound(strings.TrimSpace(ev.Message), 8*maxLine))
		if len(msg) > maxLine {
			msg = cutRunes(msg, maxLine) + lineCut
		}
		out = append(out, incident.Event{Type: ev.Type, Reason: ev.Reason, Message: msg, Count: count, LastSeen: last})
	}
	slices.SortFunc(out, func(a, b incident.Event) int {
		if (a.Type == corev1.EventTypeWarning) != (b.Type == corev1.EventTypeWarning) {
			if a.Type == corev1.EventTypeWarning {
				return -1
			}
			return 1
		}
		return cmp.Or(b.LastSeen.Compare(a.LastSeen), strings.Compare(a.Reason, b.Reason))
	})
	return out[:min(len(out), e.opts.Events)]
}

// ranBefore: the container has run (so it has a log); a pod that cannot
// pull its image or create its container has none.
func ranBefore(inc incident.Incident) bool {
	switch inc.Problem() {
	case "CrashLoopBackOff", "OOMKilled", "Restarting", "NotReady":
		return true
	}
	return false
}

// kubeletLostLogPrefix starts what the kubelet answers, with status 200,
// for a container it has already removed.
const kubeletLostLogPrefix = "unable to retrieve container logs for "

func kubeletLostLog(b []byte) bool {
	return bytes.HasPrefix(bytes.TrimSpace(b), []byte(kubeletLostLogPrefix))
}

// errLogGone: neither instance's log is there any more.
var errLogGone = errors.New("the kubelet has removed the crashed container and its log")

func restarts(inc incident.Incident) int {
	n, _ := strconv.Atoi(inc.Facts["restartCount"])
	return n
}

// splitKey splits an object key Kind/namespace/name.
func splitKey(key string) (kind, namespace, name string) {
	kind, rest, _ := strings.Cut(key, "/")
	namespace, name, _ = strings.Cut(rest, "/")
	return kind, namespace, name
}

// crashedLog reads the last lines (at most maxBytes once cleaned) of
// the crashed instance of inc's container in pod, redacted: the previous
// container while the kubelet backs off or has restarted it; the current
// one when it is the one that just exited.
func (e *Enricher) crashedLog(ctx context.Context, inc incident.Incident, ns, pod string, lines, maxBytes int) (*incident.Logs, error) {
	previous := restarts(inc) > 0 && inc.Facts["state"] != "terminated"
	limit := int64(maxBytes * fetchFactor)
	tail := int64(lines) + 1 // one more than kept: were older lines cut?
	var logs *incident.Logs
	err := e.timed(ctx, "logs", func(ctx context.Context) error {
		b, err := e.opts.Source.Logs(ctx, ns, pod, &corev1.PodLogOptions{Container: inc.Container, Previous: previous, TailLines: &tail, LimitBytes: &limit})
		if err == nil && previous && kubeletLostLog(b) {
			// The kubelet has removed the previous container already
			// (it keeps one dead container per container); the current
			// instance's log is the nearest there is.
			previous = false
			b, err = e.opts.Source.Logs(ctx, ns, pod, &corev1.PodLogOptions{Container: inc.Container, TailLines: &tail, LimitBytes: &limit})
		}
		if err == nil && kubeletLostLog(b) {
			return errLogGone
		}
		if err != nil {
			return err
		}
		kept, cut := cleanTail(b, lines, maxBytes, e.opts.Redactor)
		logs = &incident.Logs{Container: inc.Container, Previous: previous, Lines: kept, Truncated: cut}
		return nil
	})
	return logs, err
}
