package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/herald-k8s/herald/config"
	"github.com/herald-k8s/herald/handlers"
	"github.com/herald-k8s/herald/internal/actions"
	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/internal/kube"
	"github.com/herald-k8s/herald/internal/silence"
	"github.com/herald-k8s/herald/internal/slackact"
)

// interactiveParts is what the Slack buttons need from the rest of
// herald.
type interactiveParts struct {
	tracker *incident.Tracker
	// notify is the reconcile loop's dispatcher (what changed, crash
	// context, sinks): an acknowledgement's message keeps what the
	// firing showed.
	notify handlers.Dispatcher
	// moreLogs is the crash context stage's (nil: context is off).
	moreLogs func(ctx context.Context, inc incident.Incident, lines int) (*incident.Logs, error)
	saved    *incident.Saved
	dynamic  dynamic.Interface
	typed    *kube.Client
	logger   *slog.Logger
	reg      prometheus.Registerer
}

// newInteractive makes a Socket Mode receiver for each Slack sink with
// buttons (slack.interactive), and returns what runs them while leading
// (nothing when none has buttons).
func newInteractive(cfg *config.Config, p interactiveParts) func(ctx context.Context) {
	var receivers []*slackact.Receiver
	var metrics *slackact.Metrics
	for _, sc := range cfg.Sinks {
		sl := sc.Slack
		if sl == nil || sl.Interactive == nil {
			continue
		}
		if metrics == nil {
			metrics = slackact.NewMetrics(p.reg)
		}
		x := actions.New(actions.Options{
			Incidents: p.tracker, Dispatch: p.notify.Dispatch, Saved: p.saved,
			Silences: silenceClient{p.dynamic}, Events: func(ctx context.Context, ev *corev1.Event) error { _, err := p.typed.CreateEvent(ctx, ev); return err },
			Logs: p.moreLogs, MaxSilence: cfg.SilenceMaxDuration(), Logger: p.logger,
		})
		receivers = append(receivers, slackact.New(slackact.Options{
			Sink: sc.Name, BotToken: sl.Token.Secret().Reveal(), AppToken: sl.Interactive.AppToken.Secret().Reveal(), APIURL: sl.APIURL,
			Interactive: sl.Interactive, Executor: x, Logger: p.logger, Metrics: metrics,
		}))
	}
	return func(ctx context.Context) {
		var wg sync.WaitGroup
		for _, r := range receivers {
			wg.Go(func() { r.Run(ctx) })
		}
		wg.Wait()
	}
}

// silenceClient creates and deletes Silences with the dynamic client.
type silenceClient struct{ dyn dynamic.Interface }

func (c silenceClient) Create(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	return c.dyn.Resource(silence.Resource).Namespace(obj.GetNamespace()).Create(ctx, obj, metav1.CreateOptions{})
}

func (c silenceClient) Get(ctx context.Context, namespace, name string) (*unstructured.Unstructured, error) {
	return c.dyn.Resource(silence.Resource).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (c silenceClient) List(ctx context.Context, namespace string, labels map[string]string) ([]unstructured.Unstructured, error) {
	list, err := c.dyn.Resource(silence.Resource).Namespace(namespace).List(ctx, metav1.ListOptions{LabelSelector: k8slabels.SelectorFromSet(labels).String()})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

func (c silenceClient) Delete(ctx context.Context, namespace, name string, uid types.UID) error {
	return c.dyn.Resource(silence.Resource).Namespace(namespace).Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
}

// interactiveSettings is what the buttons' receivers are made of, by
// sink: a reload may not change it. Tokens by where they come from, not
// their values: a rotated token file must not make an unrelated reload
// fail (the receiver reads the value at start).
func interactiveSettings(cfg *config.Config) map[string]string {
	out := map[string]string{}
	for _, sc := range cfg.Sinks {
		sl := sc.Slack
		if sl == nil || sl.Interactive == nil {
			continue
		}
		token, app := "", ""
		if sl.Token != nil {
			token = sl.Token.String()
		}
		if sl.Interactive.AppToken != nil {
			app = sl.Interactive.AppToken.String()
		}
		allow, _ := json.Marshal(sl.Interactive.Allow)
		out[sc.Name] = strings.Join([]string{token, app, sl.APIURL, string(allow)}, "\x00")
	}
	return out
}
