package main

import (
	"fmt"
	"io"
	"log/slog"
	"maps"

	"github.com/herald-k8s/herald/config"
	"github.com/herald-k8s/herald/sinks"
	"github.com/herald-k8s/herald/sinks/alertmanager"
	"github.com/herald-k8s/herald/sinks/email"
	natssink "github.com/herald-k8s/herald/sinks/nats"
	"github.com/herald-k8s/herald/sinks/opsgenie"
	"github.com/herald-k8s/herald/sinks/pagerduty"
	"github.com/herald-k8s/herald/sinks/slack"
	"github.com/herald-k8s/herald/sinks/stdout"
	"github.com/herald-k8s/herald/sinks/teams"
	"github.com/herald-k8s/herald/sinks/webhook"
)

// buildSinks makes every configured sink with its queue settings; close
// releases their connections. Every sink says which cluster it speaks
// for: the chat and on-call sinks by their own clusterName (which the
// top-level one defaults), the payload sinks and stdout by the top-level
// clusterName. replica is this process's leader-election
// identity, which webhooks carry as Herald-Replica.
func buildSinks(cfg *config.Config, out io.Writer, refs slack.RefStore, replica string, logger *slog.Logger) (lanes []sinks.LaneOptions, close func(), err error) {
	var closers []func()
	close = func() {
		for _, c := range closers {
			c()
		}
	}
	defer func() {
		if err != nil {
			close()
		}
	}()
	tlsOpts := func(sink string, t config.TLSConfig) sinks.TLSOptions {
		if t.InsecureSkipVerify {
			logger.Warn("TLS certificate verification is OFF for this sink: anyone on the path can read and forge its traffic", "sink", sink)
		}
		return sinks.TLSOptions{CAFile: t.CAFile, CertFile: t.CertFile, KeyFile: t.KeyFile, InsecureSkipVerify: t.InsecureSkipVerify}
	}
	userAgent := "herald/" + version
	for _, sc := range cfg.Sinks {
		lane := sinks.LaneOptions{RateLimit: sc.RateLimit, MaxAge: sc.MaxAge, QueueSize: sc.QueueSize}
		switch {
		case sc.Webhook != nil:
			w := sc.Webhook
			var secrets []string
			for _, ref := range w.Secrets {
				secrets = append(secrets, ref.Secret().Reveal())
			}
			headers := maps.Clone(w.Headers)
			for name, ref := range w.HeadersFrom {
				if headers == nil {
					headers = map[string]string{}
				}
				headers[name] = ref.Secret().Reveal()
			}
			s, err := webhook.New(webhook.Options{
				Name: sc.Name, URL: urlOrSecret(w.URL, w.URLFrom), Destinations: destinations(w.Destinations), Timeout: w.Timeout, Headers: headers, UserAgent: userAgent, Replica: replica,
				Secrets: secrets, CloudEvents: w.CloudEvents, TLS: tlsOpts(sc.Name, w.TLS), Body: w.Body, ContentType: w.ContentType,
				ClusterName: cfg.ClusterName,
			})
			if err != nil {
				return nil, close, err
			}
			lane.Sink = s
		case sc.Slack != nil:
			sl := sc.Slack
			lane.Sink = slack.New(slack.Options{
				Name: sc.Name, Token: sl.Token.Secret().Reveal(), WebhookURL: sl.WebhookURL.Secret().Reveal(),
				Channel: sl.Channel, APIURL: sl.APIURL, ClusterName: sl.ClusterName, Refs: refs,
				Interactive: sl.Interactive != nil, NoSilence: sl.Interactive != nil && !sl.Interactive.SilenceGranted(),
			})
		case sc.NATS != nil:
			n := sc.NATS
			s, err := natssink.New(natssink.Options{
				Name: sc.Name, URL: n.URL, Subject: n.Subject, JetStream: n.JetStream, Timeout: n.Timeout,
				CredsFile: secretFile(n.Creds), NKeySeedFile: secretFile(n.NKeySeed), TLS: tlsOpts(sc.Name, n.TLS), Logger: logger,
				ClusterName: cfg.ClusterName,
			})
			if err != nil {
				return nil, close, err
			}
			closers = append(closers, s.Close)
			lane.Sink, lane.Close = s, s.Close
		case sc.Alertmanager != nil:
			a := sc.Alertmanager
			opts := alertmanager.Options{
				Name: sc.Name, URLs: a.URLs, Resend: a.ResendInterval, Labels: a.Labels, RuleLabels: alertLabels(cfg),
				ClusterName: a.ClusterName, GeneratorURL: a.GeneratorURL, BearerToken: a.BearerToken.Secret().Reveal(),
				Timeout: a.Timeout, UserAgent: userAgent, TLS: tlsOpts(sc.Name, a.TLS), Logger: logger,
			}
			if b := a.BasicAuth; b != nil {
				opts.Username, opts.Password = b.Username, b.Password.Secret().Reveal()
			}
			s, err := alertmanager.New(opts)
			if err != nil {
				return nil, close, err
			}
			lane.Sink = s
		case sc.PagerDuty != nil:
			p := sc.PagerDuty
			s, err := pagerduty.New(pagerduty.Options{
				Name: sc.Name, URL: p.URL, RoutingKey: p.RoutingKey.Secret().Reveal(), Destinations: destinations(p.Destinations), ClusterName: p.ClusterName,
				Timeout: p.Timeout, UserAgent: userAgent, TLS: tlsOpts(sc.Name, p.TLS),
			})
			if err != nil {
				return nil, close, err
			}
			lane.Sink = s
		case sc.Opsgenie != nil:
			o := sc.Opsgenie
			var responders []opsgenie.Responder
			for _, r := range o.Responders {
				if r.Type == "user" {
					responders = append(responders, opsgenie.Responder{Type: r.Type, Username: r.Name})
				} else {
					responders = append(responders, opsgenie.Responder{Type: r.Type, Name: r.Name})
				}
			}
			s, err := opsgenie.New(opsgenie.Options{
				Name: sc.Name, URL: o.URL, APIKey: o.APIKey.Secret().Reveal(), Responders: responders, Tags: o.Tags,
				ClusterName: o.ClusterName, Timeout: o.Timeout, UserAgent: userAgent, TLS: tlsOpts(sc.Name, o.TLS),
			})
			if err != nil {
				return nil, close, err
			}
			lane.Sink = s
		case sc.Email != nil:
			e := sc.Email
			var password string
			if e.SMTP.Password != nil {
				password = e.SMTP.Password.Secret().Reveal()
			}
			dests := map[string][]string{}
			for name, d := range e.Destinations {
				dests[name] = d.To
			}
			s, err := email.New(email.Options{
				Name: sc.Name, Host: e.SMTP.Host, Port: e.SMTP.Port, Security: e.SMTP.Security, Username: e.SMTP.Username, Password: password,
				TLS: tlsOpts(sc.Name, e.SMTP.TLS), From: e.From, To: e.To, Destinations: dests, ClusterName: e.ClusterName, Timeout: e.Timeout,
			})
			if err != nil {
				return nil, close, err
			}
			lane.Sink = s
		case sc.Teams != nil:
			t := sc.Teams
			s, err := teams.New(teams.Options{
				Name: sc.Name, URL: urlOrSecret(t.URL, t.URLFrom), Destinations: destinations(t.Destinations), ClusterName: t.ClusterName,
				Timeout: t.Timeout, UserAgent: userAgent, TLS: tlsOpts(sc.Name, t.TLS),
			})
			if err != nil {
				return nil, close, err
			}
			lane.Sink = s
		case sc.Stdout != nil:
			lane.Sink = stdout.New(sc.Name, sc.Stdout.Format, cfg.ClusterName, out)
		}
		lanes = append(lanes, lane)
	}
	return lanes, close, nil
}

// urlOrSecret is a URL given in the clear or read from a secret.
func urlOrSecret(url string, from *config.SecretRef) string {
	if from != nil {
		return from.Secret().Reveal()
	}
	return url
}

// destinations are a sink's named destinations: routing keys or URLs, in
// the clear or read from secrets.
func destinations(d map[string]*config.Destination) map[string]string {
	if len(d) == 0 {
		return nil
	}
	out := make(map[string]string, len(d))
	for name, dest := range d {
		if dest.RoutingKey != nil {
			out[name] = dest.RoutingKey.Secret().Reveal()
		} else {
			out[name] = urlOrSecret(dest.URL, dest.URLFrom)
		}
	}
	return out
}

// alertLabels are the rules' alertLabels, by rule name.
func alertLabels(cfg *config.Config) map[string]map[string]string {
	out := map[string]map[string]string{}
	for _, r := range cfg.Rules {
		if len(r.AlertLabels) > 0 {
			out[r.Name] = maps.Clone(r.AlertLabels)
		}
	}
	return out
}

// secretFile is the file a NATS credential comes from (the NATS client
// reads credentials and seeds from files itself).
func secretFile(r *config.SecretRef) string {
	if r == nil {
		return ""
	}
	return r.File
}

// checkBodyTemplates compiles every webhook body template (trying it on
// sample notifications), so that a broken one is a config error at its
// place in the file, not a failure at the first alert.
func checkBodyTemplates(cfg *config.Config) config.Errors {
	var errs config.Errors
	for i, sc := range cfg.Sinks {
		if sc.Webhook == nil || sc.Webhook.Body == "" {
			continue
		}
		if _, err := webhook.CompileBody(sc.Webhook.Body); err != nil {
			line, col, msg := 1, 0, err.Error()
			if te, ok := err.(*webhook.TemplateError); ok {
				line, col, msg = te.Line, te.Col, te.Msg
			}
			errs = append(errs, cfg.ErrorInValue(fmt.Sprintf("sinks[%d].webhook.body", i), line, col, "body template: %s", msg))
		}
	}
	return errs
}
