package incident

import "time"

// Changes is what changed just before an incident began: the rollouts of
// its workload and the edits of the ConfigMaps and Secrets its pods read,
// within a window before the incident's first sight, or that nothing did.
// The first question on every call is "what changed?"; most crashes follow
// a change. internal/changes makes it from what herald watches (no API
// request); it travels with the notification (sinks render it) and, like
// Context, is not kept in the ledger. It names env vars, resources and
// referenced objects, never their values.
type Changes struct {
	// Workload is the workload the record is about: "Deployment/checkout".
	Workload string `json:"workload"`
	// Since is the start of the window (the failure's first sight less
	// the window), At the failure.
	Since time.Time `json:"since"`
	At    time.Time `json:"at"`
	// Rollouts within the window, newest first.
	Rollouts []Rollout `json:"rollouts,omitempty"`
	// Undo is the command that rolls the workload back to before the
	// window's rollouts, when herald knows the revision.
	Undo string `json:"undo,omitempty"`
	// Objects are the referenced ConfigMaps and Secrets that changed (or
	// were made) within the window, newest first.
	Objects []ObjectChange `json:"objects,omitempty"`
	// Lines say all of it in words, one change a line, as alerts show it
	// ("Rolled out 4 min before (revision 7, by argocd): image
	// shop/checkout:1.8.2 → 1.9.0; env DB_POOL changed"); when nothing
	// changed, one line saying so ("No change to this workload in the
	// last 30 min"), which rules a change out. Undo is not among them.
	Lines []string `json:"lines"`
}

// Rollout is one change of the workload's pod template.
type Rollout struct {
	Revision string    `json:"revision,omitempty"`
	At       time.Time `json:"at"`
	// By is the field manager that wrote the spec (argocd, kubectl, helm).
	By string `json:"by,omitempty"`
	// Items say what changed, by name ("image app: a:1 → 2", "env
	// DB_POOL changed"); empty when herald did not see the change itself
	// (Known false: it started watching after).
	Items []string `json:"items,omitempty"`
	Known bool     `json:"known"`
	// ChangeCause is the kubernetes.io/change-cause annotation, redacted;
	// Tools the Argo CD and Flux annotations (key=value).
	ChangeCause string   `json:"changeCause,omitempty"`
	Tools       []string `json:"tools,omitempty"`
}

// ObjectChange is one referenced ConfigMap's or Secret's change.
type ObjectChange struct {
	Kind    string    `json:"kind"`
	Name    string    `json:"name"`
	At      time.Time `json:"at"`
	Created bool      `json:"created,omitempty"`
	// MetaToo: its labels or annotations changed too, so its data may
	// not have.
	MetaToo bool `json:"metaToo,omitempty"`
	// AlsoFailing are the other workloads that read it and began failing
	// since it changed ("Deployment/cart"): one change, several alerts.
	AlsoFailing []string `json:"alsoFailing,omitempty"`
}

// Empty reports whether c says that nothing changed.
func (c *Changes) Empty() bool { return c == nil || len(c.Rollouts) == 0 && len(c.Objects) == 0 }
