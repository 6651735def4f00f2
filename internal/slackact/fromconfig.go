package slackact

import (
	"context"
	"encoding/json"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/herald-k8s/herald/config"
	"github.com/herald-k8s/herald/internal/actions"
)

// FromConfig makes a Socket Mode receiver for each Slack sink of cfg with
// buttons (slack.interactive), each carrying out presses with an executor
// made of act (its MaxSilence from cfg's silences.maxDuration), and
// returns what runs them while leading (nothing when no sink has
// buttons).
func FromConfig(cfg *config.Config, act actions.Options, reg prometheus.Registerer) func(ctx context.Context) {
	var receivers []*Receiver
	var metrics *Metrics
	act.MaxSilence = cfg.SilenceMaxDuration()
	for _, sc := range cfg.Sinks {
		sl := sc.Slack
		if sl == nil || sl.Interactive == nil {
			continue
		}
		if metrics == nil {
			metrics = NewMetrics(reg)
		}
		receivers = append(receivers, New(Options{
			Sink: sc.Name, BotToken: sl.Token.Secret().Reveal(), AppToken: sl.Interactive.AppToken.Secret().Reveal(), APIURL: sl.APIURL,
			Interactive: sl.Interactive, Executor: actions.New(act), Logger: act.Logger, Metrics: metrics,
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

// Settings is what the receivers of cfg are made of, by sink: a reload
// may not change it. Tokens by where they come from, not their values: a
// rotated token file must not make an unrelated reload fail (a receiver
// reads the value at start).
func Settings(cfg *config.Config) map[string]string {
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
