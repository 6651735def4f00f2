// Package slackact receives the presses of herald's Slack buttons over
// Socket Mode (a WebSocket herald opens to Slack: no ingress, no public
// URL), checks who may press what, has internal/actions carry them out,
// and answers in Slack: a thread reply, or a message only the presser
// sees. Only the leader runs it, so only one replica holds the
// connection; a press that reaches no one is delivered again by Slack.
package slackact

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/herald-k8s/herald/config"
	"github.com/herald-k8s/herald/internal/actions"
	"github.com/herald-k8s/herald/internal/fence"
	"github.com/herald-k8s/herald/sinks"
	slacksink "github.com/herald-k8s/herald/sinks/slack"
)

// The buttons' action IDs (sinks/slack puts them on the messages) and
// what each asks.
var kinds = map[string]actions.Kind{
	slacksink.ActionSilence1h:       actions.Silence1h,
	slacksink.ActionSilence4h:       actions.Silence4h,
	slacksink.ActionSilenceResolved: actions.SilenceResolved,
	slacksink.ActionUnsilence:       actions.Unsilence,
	slacksink.ActionAck:             actions.Acknowledge,
	slacksink.ActionMoreLogs:        actions.MoreLogs,
}

// pressTimeout bounds one press's work (API requests, the ledger write);
// refWait how long a press waits for the sink to record where its
// message is.
const (
	pressTimeout = 10 * time.Second
	refWait      = 2 * time.Second
)

// Options wire a Receiver.
type Options struct {
	// Sink is the Slack sink's name (logs).
	Sink               string
	BotToken, AppToken string
	APIURL             string // default Slack's
	Interactive        *config.Interactive
	Executor           *actions.Executor
	// Route returns the route an incident went by ("" none), for allow
	// entries that name routes.
	Logger  *slog.Logger
	Metrics *Metrics
	// GroupsTTL is how long a user group's members are trusted (1 min).
	GroupsTTL time.Duration
}

// Metrics count presses.
type Metrics struct {
	Actions   *prometheus.CounterVec
	Connected prometheus.Gauge
}

// NewMetrics registers the receiver's metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Actions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "herald_slack_actions_total",
			Help: "Presses of herald's Slack buttons, by action and result (done, already, refused, forbidden, limited, failed, unknown)."}, []string{"action", "result"}),
		Connected: prometheus.NewGauge(prometheus.GaugeOpts{Name: "herald_slack_socket_connected",
			Help: "1 while this replica (the leader) holds the Slack Socket Mode connection."}),
	}
	reg.MustRegister(m.Actions, m.Connected)
	return m
}

// Receiver handles presses.
type Receiver struct {
	opts Options
	api  *slack.Client

	mu sync.Mutex
	// handled holds the keys of presses this replica has handled or is
	// handling: Slack delivers a press again when its acknowledgement is
	// late, and the second delivery must not act (or say) twice.
	handled map[string]time.Time
	groups  map[string]groupMembers
	// presses are each person's presses of the last minute; moreLogs
	// when each incident's logs were last posted (limited).
	presses  map[string][]time.Time
	moreLogs map[string]time.Time
	// refusals: when each person was last told a press was refused (at
	// most one such answer a minute); queues: each person's presses
	// waiting for their worker (pressQueue).
	refusals map[string]time.Time
	queues   map[string]chan queuedPress
}

// notOurs says why a press is not one to act on here ("" when it is):
// the message pressed must be the one this sink posted for the incident
// (the ledger keeps where). Otherwise a press on another sink's or
// another cluster's message, sharing this Slack app, would be judged by
// this sink's allow list and act on whatever incident here has that ID.
func (r *Receiver) notOurs(ctx context.Context, p actions.Press, channel, ts string) string {
	inc, ok := r.opts.Executor.Lookup(p.IncidentID)
	if !ok {
		return "" // the executor says it does not know the incident
	}
	if inc.Refs[r.opts.Sink] == "" {
		// The sink records where its message is once Slack has answered
		// its post: a press can come first by a few milliseconds.
		_ = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, refWait, true, func(context.Context) (bool, error) {
			inc, _ = r.opts.Executor.Lookup(p.IncidentID)
			return inc.Refs[r.opts.Sink] != "", nil
		})
	}
	if ref := inc.Refs[r.opts.Sink]; ref == "" || ref != channel+":"+ts {
		return "This button is not on the message herald posted for incident " + p.IncidentID + " here (another cluster's or another sink's herald shares this Slack app?): nothing was done. Give each herald its own Slack app (docs/buttons.md)."
	}
	return ""
}

type groupMembers struct {
	users []string
	at    time.Time
}

// New makes a Receiver.
func New(opts Options) *Receiver {
	if opts.GroupsTTL == 0 {
		opts.GroupsTTL = time.Minute
	}
	// Its own client with a timeout: slack-go's default has none, and a
	// hung answer would hold every press behind it.
	apiOpts := []slack.Option{slack.OptionAppLevelToken(opts.AppToken), slack.OptionHTTPClient(&http.Client{Timeout: pressTimeout, Transport: fence.Transport(http.DefaultTransport.(*http.Transport).Clone())})}
	if opts.APIURL != "" {
		apiOpts = append(apiOpts, slack.OptionAPIURL(strings.TrimSuffix(opts.APIURL, "/")+"/"))
	}
	return &Receiver{opts: opts, api: slack.New(opts.BotToken, apiOpts...), handled: map[string]time.Time{}, groups: map[string]groupMembers{},
		presses: map[string][]time.Time{}, moreLogs: map[string]time.Time{}, refusals: map[string]time.Time{}, queues: map[string]chan queuedPress{}}
}

// Run holds the Socket Mode connection and handles presses until ctx
// ends (the replica stops leading, or stops).
func (r *Receiver) Run(ctx context.Context) {
	client := socketmode.New(r.api, socketmode.OptionLog(slogPrinter{r.opts.Logger}))
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		if err := client.RunContext(ctx); err != nil && ctx.Err() == nil {
			r.opts.Logger.Error("Slack Socket Mode stopped; buttons do nothing until herald restarts", "sink", r.opts.Sink, "error", err)
		}
	})
	defer r.opts.Metrics.Connected.Set(0)
	for {
		select {
		case <-ctx.Done():
			return
		case evt, ok := <-client.Events:
			if !ok {
				return
			}
			switch evt.Type {
			case socketmode.EventTypeConnected:
				r.opts.Metrics.Connected.Set(1)
				r.opts.Logger.Info("Slack Socket Mode connected: buttons are live", "sink", r.opts.Sink)
			case socketmode.EventTypeConnectionError, socketmode.EventTypeDisconnect:
				r.opts.Metrics.Connected.Set(0)
			case socketmode.EventTypeInvalidAuth:
				r.opts.Metrics.Connected.Set(0)
				r.opts.Logger.Error("Slack refused the app-level token (invalid_auth): check slack.interactive.appToken", "sink", r.opts.Sink)
			case socketmode.EventTypeInteractive:
				cb, ok := evt.Data.(slack.InteractionCallback)
				if !ok || evt.Request == nil {
					continue
				}
				// Each person's presses in order, people side by side:
				// one slow answer holds no one else's (pressQueue).
				r.enqueue(ctx, &wg, cb, func() {
					// Acknowledged after the action: a leader that dies
					// before this leaves the press to Slack's redelivery,
					// which the next leader handles (idempotent by key).
					if err := client.AckCtx(ctx, evt.Request.EnvelopeID, nil); err != nil {
						r.opts.Logger.Warn("acknowledging a Slack press", "error", err)
					}
				})
			}
		}
	}
}

// handle carries out every action of one interaction.
func (r *Receiver) handle(ctx context.Context, cb slack.InteractionCallback) {
	if cb.Type != slack.InteractionTypeBlockActions {
		return
	}
	for _, a := range cb.ActionCallback.BlockActions {
		kind, known := kinds[a.ActionID]
		if !known && strings.HasPrefix(a.ActionID, slacksink.LinkActionPrefix) {
			continue // a link button: Slack opened its URL; nothing to do here
		}
		if !known {
			r.count("unknown", "unknown") // not the ID: an app shared with others would grow the label without bound
			continue
		}
		key := cb.User.ID + "/" + a.ActionTs + "/" + a.ActionID + "/" + a.Value
		if !r.claim(key) {
			continue // this delivery repeats one handled here
		}
		p := actions.Press{Key: key, Kind: kind, IncidentID: a.Value, Actor: actions.Actor{Via: "slack", ID: cb.User.ID, Name: sinks.Who(firstOf(cb.User.Name, cb.User.ID))}}
		r.press(ctx, cb, p)
	}
}

func (r *Receiver) press(ctx context.Context, cb slack.InteractionCallback, p actions.Press) {
	// Bounded, answers to Slack included: presses are handled one at a
	// time, and Slack gives up on an answer after a few seconds (and
	// delivers the press again, which claim turns away here, and the next
	// leader finds done).
	ctx, cancel := context.WithTimeout(ctx, pressTimeout)
	defer cancel()
	channel, ts := cb.Channel.ID, cb.Container.MessageTs
	if channel == "" {
		channel = cb.Container.ChannelID
	}
	log := r.opts.Logger.With("sink", r.opts.Sink, "action", string(p.Kind), "incident", p.IncidentID, "user", p.Actor.By())
	refuse := func(result, why string) {
		r.count(string(p.Kind), result)
		if !r.mayAnswerRefusal(p.Actor.ID) {
			// Told less than a minute ago: a stream of refused presses
			// costs no more posts, and no more log lines than this.
			log.Debug("Slack press refused (answered lately)", "why", why)
			return
		}
		log.Warn("Slack press refused", "why", why)
		r.ephemeral(ctx, channel, p.Actor.ID, why)
	}
	if why := r.notOurs(ctx, p, channel, ts); why != "" {
		refuse("refused", why)
		return
	}
	if why := r.limited(p); why != "" {
		refuse("limited", why)
		return
	}
	if ok, why := r.allowed(ctx, p); !ok {
		refuse("forbidden", why)
		return
	}
	if p.Kind == actions.MoreLogs {
		if why := r.logsPostedLately(p.IncidentID); why != "" {
			refuse("limited", why)
			return
		}
	}
	res := r.opts.Executor.Do(ctx, p)
	r.count(string(p.Kind), string(res.Outcome))
	log.Info("Slack press", "result", res.Outcome, "said", res.Say)
	switch {
	case res.Quiet:
	case p.Kind == actions.MoreLogs && res.Logs != nil:
		if r.reply(ctx, channel, ts, logsReply(p.IncidentID, res.Logs)) {
			r.logsPosted(p.IncidentID)
		}
	case res.Outcome == actions.Done && p.Kind != actions.Acknowledge:
		// The message itself changes through the incident's own
		// notification (silenced, acknowledged); the thread says who.
		// By name: a mention in a new reply would ping who pressed.
		r.reply(ctx, channel, ts, escape(res.Say+" (by "+p.Actor.Name+")"))
	case res.Outcome != actions.Done:
		r.ephemeral(ctx, channel, p.Actor.ID, res.Say)
	}
}

// claim marks key as handled here, and says whether it was not yet.
// Keys are kept an hour: Slack stops redelivering long before.
func (r *Receiver) claim(key string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	if _, seen := r.handled[key]; seen {
		return false
	}
	for k, at := range r.handled {
		if now.Sub(at) > time.Hour {
			delete(r.handled, k)
		}
	}
	r.handled[key] = now
	return true
}

// allowed says whether p's actor may do p here, and if not, why, in
// words for them.
func (r *Receiver) allowed(ctx context.Context, p actions.Press) (bool, string) {
	var ns string
	var routes []string
	if inc, ok := r.opts.Executor.Lookup(p.IncidentID); ok {
		ns, routes = inc.Object.Namespace, inc.Routes()
	}
	who := r.opts.Interactive.Allowed(p.Kind.Permission(), ns, routes)
	if slices.Contains(who, "*") || slices.Contains(who, p.Actor.ID) {
		return true, ""
	}
	for _, id := range who {
		if strings.HasPrefix(id, "S") && slices.Contains(r.members(ctx, id), p.Actor.ID) {
			return true, ""
		}
	}
	what := map[string]string{"silence": "silence or unsilence", "acknowledge": "acknowledge", "moreLogs": "read more logs of"}[p.Kind.Permission()]
	where := "this incident"
	if ns != "" {
		where = "incidents in namespace " + ns
	}
	return false, "You may not " + what + " " + where + ": herald's configuration (slack.interactive.allow) does not list you or a group of yours. Nothing was changed."
}

// members are a user group's members, asked of Slack at most once a
// GroupsTTL; on error, the last known (or none: refusing is safe).
func (r *Receiver) members(ctx context.Context, group string) []string {
	r.mu.Lock()
	g, ok := r.groups[group]
	r.mu.Unlock()
	if ok && time.Since(g.at) < r.opts.GroupsTTL {
		return g.users
	}
	users, err := r.api.GetUserGroupMembersContext(ctx, group)
	if err != nil {
		r.opts.Logger.Warn("reading a Slack user group's members (needs the usergroups:read scope)", "group", group, "error", err)
		if ok && time.Since(g.at) < 2*r.opts.GroupsTTL {
			return g.users // a short outage of Slack's API
		}
		return nil // not known for long: someone removed from the group must not keep its rights
	}
	r.mu.Lock()
	r.groups[group] = groupMembers{users: users, at: time.Now()}
	r.mu.Unlock()
	return users
}

func (r *Receiver) ephemeral(ctx context.Context, channel, user, text string) {
	if _, err := r.api.PostEphemeralContext(ctx, channel, user, slack.MsgOptionText(escape(text), false)); err != nil {
		r.opts.Logger.Warn("answering a Slack press (chat.postEphemeral)", "error", err)
	}
}

func (r *Receiver) reply(ctx context.Context, channel, ts, text string) bool {
	if _, _, err := r.api.PostMessageContext(ctx, channel, slack.MsgOptionTS(ts), slack.MsgOptionText(text, false)); err != nil {
		r.opts.Logger.Warn("answering a Slack press in its thread (chat.postMessage)", "error", err)
		return false
	}
	return true
}

func (r *Receiver) count(action, result string) {
	r.opts.Metrics.Actions.WithLabelValues(action, result).Inc()
}

func firstOf(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// slogPrinter gives socketmode's logger interface herald's log, at debug.
type slogPrinter struct{ l *slog.Logger }

func (p slogPrinter) Output(_ int, s string) error {
	p.l.Debug("slack socket mode", "msg", strings.TrimSpace(s))
	return nil
}
