package incident

import (
	"encoding/json"
	"maps"
	"slices"
	"unicode/utf8"
)

// MaxIncidentBytes bounds one incident's ledger entry, so that however
// its texts grew (a termination message, a rule's template over a huge
// label, notifications pending for a sink that has been down for days),
// it always fits a shard with many others: a shard is MaxShardBytes, and
// a ledger that cannot be written loses every incident's state, not one.
const MaxIncidentBytes = 64 << 10

// Limits of fitForLedger, applied in turn until the entry fits.
const (
	fitText    = 2 << 10 // bytes of each text (title, text, a fact, a change)
	fitPending = 100     // newest undelivered notifications kept
	fitMembers = 5       // member keys kept
	fitTitle   = 256     // bytes of the title at the last step
)

// encodeForLedger is the JSON of inc's ledger entry: as it is if that
// is at most MaxIncidentBytes, else shrunk by fitForLedger. The incident
// in memory keeps everything; only the copy saved is cut.
func encodeForLedger(inc *Incident) ([]byte, error) {
	b, err := json.Marshal(inc)
	if err != nil || len(b) <= MaxIncidentBytes {
		return b, err
	}
	for step := range fitSteps {
		if b, err = json.Marshal(fitForLedger(inc, step)); err != nil || len(b) <= MaxIncidentBytes {
			return b, err
		}
	}
	return b, err // not reached: the last step leaves only bounded fields
}

const fitSteps = 3

// fitForLedger returns a copy of inc cut down, more at each step: (0)
// every text to fitText, the member sample to fitMembers; (1) only the
// newest fitPending pending notifications (an older one is superseded by
// a newer one for the same incident), and no links; (2) no facts, text or refs, the
// title to fitTitle, one pending notification. What is left — identity,
// counts, times, and the configuration's sink names — is bounded by the
// configuration, not by anything in the cluster.
func fitForLedger(inc *Incident, step int) *Incident {
	c := *inc
	c.Title, c.Text, c.MutedBy = cut(c.Title, fitText), cut(c.Text, fitText), cut(c.MutedBy, fitText)
	c.Channel = cut(c.Channel, fitTitle)
	c.Facts = maps.Clone(c.Facts)
	for k, v := range c.Facts {
		c.Facts[k] = cut(v, fitText)
	}
	c.Members = c.Members[:min(len(c.Members), fitMembers)]
	c.Pending = slices.Clone(c.Pending)
	for i := range c.Pending {
		c.Pending[i].Change = cut(c.Pending[i].Change, fitText)
	}
	c.Refs = maps.Clone(c.Refs)
	for k, v := range c.Refs {
		c.Refs[k] = cut(v, fitText)
	}
	if step >= 1 && len(c.Pending) > fitPending {
		c.Pending = c.Pending[len(c.Pending)-fitPending:]
	}
	if step >= 1 {
		// Up to 10 KB, filled again at the incident's next reconcile;
		// a link cut short would be a broken one.
		c.Links = nil
	}
	if step >= 2 {
		c.Facts, c.Text, c.Refs = nil, "", nil
		c.Title = cut(c.Title, fitTitle)
		c.Pending = c.Pending[max(len(c.Pending)-1, 0):]
		c.Starts = c.Starts[max(len(c.Starts)-10, 0):]
		c.RunbookURL = cut(c.RunbookURL, fitTitle)
	}
	return &c
}

// cut keeps at most n bytes of s, not splitting a character, marking a
// cut with "…".
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n - len("…")
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}
