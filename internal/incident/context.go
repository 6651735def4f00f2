package incident

import "time"

// Context is what a reader needs to act on a crash without opening a
// terminal: the crashed container's last log lines, the pod's recent
// events, its node, and a plain hint. internal/enrich gathers it for the
// notifications worth it, off the reconcile loop; it travels with the
// notification (sinks render it) and is not kept in the ledger.
type Context struct {
	Logs   *Logs   `json:"logs,omitempty"`
	Events []Event `json:"events,omitempty"`
	Node   *Node   `json:"node,omitempty"`
	// Hint is one plain sentence: what the exit code or reason usually
	// means, and where to look.
	Hint string `json:"hint,omitempty"`
	// Pod is the pod the context is about: the incident's, or for a
	// workload's incident, the first of its pods that failed.
	Pod string `json:"pod,omitempty"`
	// Unavailable says, in one line, what could not be had in time and
	// why ("logs: the kubelet did not answer within 2s").
	Unavailable string `json:"unavailable,omitempty"`
}

// Logs is the end of a container's log, oldest line first, cleaned and
// redacted.
type Logs struct {
	Container string `json:"container"`
	// Previous: the lines are of the instance that crashed, not the one
	// running (or waiting) now.
	Previous bool     `json:"previous"`
	Lines    []string `json:"lines"`
	// Truncated: older lines (or the middle of a huge line) were cut.
	Truncated bool `json:"truncated,omitempty"`
}

// Event is one of the pod's recent events.
type Event struct {
	Type     string    `json:"type"` // Warning or Normal
	Reason   string    `json:"reason"`
	Message  string    `json:"message"`
	Count    int32     `json:"count"`
	LastSeen time.Time `json:"lastSeen"`
}

// Node is the pod's node as herald's cache sees it.
type Node struct {
	Name string `json:"name"`
	// Conditions lists what is wrong with the node (NotReady,
	// MemoryPressure, …); empty when it is healthy or not cached.
	Conditions []string `json:"conditions,omitempty"`
}
