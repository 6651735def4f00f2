package oncalltest

import (
	"testing"
	"time"

	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/internal/links"
	"github.com/herald-k8s/herald/internal/rules"
)

// Sample is one kind of notification as herald sends it, for the sinks'
// golden tests and docs/messages.md: every sink renders the same samples,
// so the golden files of Slack, Teams and stdout can be read side by
// side.
type Sample struct {
	// Name names the kind (and the golden file); Title is its heading
	// in docs/messages.md.
	Name, Title string
	// About says in a few words when herald sends it (docs/messages.md).
	About string
	Note  incident.Notification
	// Now is when it is rendered: durations count to it.
	Now time.Time
	// Buttons: Slack renders it as a Slack app with Socket Mode posts it,
	// with herald's buttons; the other sinks as always.
	Buttons bool
	// SlackOnly: only Slack renders it (the other sinks say the same as
	// for another sample).
	SlackOnly bool
}

// SampleCluster is the samples' clusterName.
const SampleCluster = "prod-eu"

// sampleStart is when the samples' incidents began.
var sampleStart = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// crashLines are the crashed container's last log lines; the last is also
// its termination message (as with terminationMessagePolicy:
// FallbackToLogsOnError), which a message must not say twice.
var crashLines = []string{
	"2026-11-22T10:11:58Z INFO connecting to postgres://app:<redacted>@db:5432/shop",
	"2026-11-22T10:12:28Z ERROR dial tcp 10.0.3.7:5432: i/o timeout",
	"panic: connect to db: i/o timeout",
}

func crashIncident() incident.Incident {
	return incident.Incident{
		ID: "7f8a9eef0a8223dc-1", Occurrence: 1, Fingerprint: "7f8a9eef0a8223dc", Rule: "pod-crashloop", Severity: "critical", Reason: "CrashLoopBackOff",
		Object: rules.ObjectRef{Kind: "Pod", Namespace: "shop", Name: "checkout-7d9f8b6c5-x2x9q", UID: "u1"}, Container: "app",
		Facts: map[string]string{"restartCount": "5", "exitCode": "1", "lastReason": "Error", "lastMessage": crashLines[2]},
		Title: "CrashLoopBackOff: Pod shop/checkout-7d9f8b6c5-x2x9q container app",
		Text:  "CrashLoopBackOff: Pod shop/checkout-7d9f8b6c5-x2x9q container app: restarted 5 times, last exit code 1 (Error)",
		Sinks: []string{"chat"}, FirstSeen: sampleStart, Members: []string{"Pod/shop/checkout-7d9f8b6c5-x2x9q"}, MemberCount: 1,
		Mentions: []string{"S0PAYMENTS", "U0ALICE"}, Route: "payments",
		RunbookURL: "https://runbooks.example.com/crashloop",
		Links:      sampleLinks,
	}
}

// sampleLinks are a rule's links: a dashboard of the workload and a log
// search of its namespace and app, over the incident's time window
// (docs/routing.md, Links), as internal/links fills them.
var sampleLinks = []links.Link{
	{Name: "Dashboard", URL: "https://grafana.example.com/d/k8s-workload?var-namespace=shop&var-workload=checkout&from=1795340700000&to=1795342350000"},
	{Name: "Logs", URL: "https://grafana.example.com/explore?left=%7B%22queries%22:[%7B%22expr%22:%22%7Bnamespace=%5C%22shop%5C%22,app=%5C%22checkout%5C%22%7D%22%7D]%7D"},
}

// crashContext is what enrich gathers for a crash of pod seen at.
func crashContext(pod string, at time.Time) *incident.Context {
	return &incident.Context{
		Hint: "Exit code 1: the program failed by itself; its last log lines usually say why.",
		Pod:  pod,
		Logs: &incident.Logs{Container: "app", Previous: true, Truncated: true, Lines: crashLines},
		Events: []incident.Event{
			{Type: "Warning", Reason: "BackOff", Message: "Back-off restarting failed container app in pod " + pod, Count: 12, LastSeen: at.Add(-time.Minute)},
			{Type: "Normal", Reason: "Pulled", Message: "Container image \"registry.example/shop/checkout:1.9.0\" already present on machine", Count: 6, LastSeen: at.Add(-2 * time.Minute)}},
		Node: &incident.Node{Name: "node-7"},
	}
}

// The "What changed" sections internal/changes makes for the samples'
// incidents (they began at sampleStart; its window is 30 min). Every
// notification of an incident carries its section, as the stage attaches
// it; the sinks show it on the open ones only.

// rolledOut: the crash-looping pod's Deployment rolled out a new image
// 4 min before, which undo would take back.
func rolledOut() *incident.Changes {
	return &incident.Changes{
		Workload: "Deployment/checkout", Since: sampleStart.Add(-30 * time.Minute), At: sampleStart,
		Rollouts: []incident.Rollout{{Revision: "7", At: sampleStart.Add(-4 * time.Minute), By: "argocd", Known: true,
			Items: []string{"image app: registry.example/shop/checkout:1.8.2 → 1.9.0", "env DB_POOL changed"}}},
		Undo:  "kubectl rollout undo deployment/checkout -n shop --to-revision=6",
		Lines: []string{"Rolled out 4 min before the failure (revision 7, by argocd): image app: registry.example/shop/checkout:1.8.2 → 1.9.0; env DB_POOL changed"},
	}
}

// configChanged: a ConfigMap the workload reads changed 2 min before, and
// another workload that reads it fails since: one change, two alerts.
func configChanged() *incident.Changes {
	return &incident.Changes{
		Workload: "Deployment/checkout", Since: sampleStart.Add(-30 * time.Minute), At: sampleStart,
		Objects: []incident.ObjectChange{{Kind: "ConfigMap", Name: "app-config", At: sampleStart.Add(-2 * time.Minute),
			AlsoFailing: []string{"Deployment/cart"}}},
		Lines: []string{"ConfigMap app-config changed 2 min before the failure; Deployment/cart also reads it and has been failing since"},
	}
}

// nothingChanged: no rollout, no ConfigMap or Secret edit in the window,
// which rules a change out.
func nothingChanged(workload string) *incident.Changes {
	return &incident.Changes{Workload: workload, Since: sampleStart.Add(-30 * time.Minute), At: sampleStart,
		Lines: []string{"No change to this workload in the last 30 min before the failure (last rollout 6 d 2 h before the failure, revision 6, by argocd)"}}
}

// Samples are one notification of each kind herald sends.
func Samples() []Sample {
	at := func(d time.Duration) time.Time { return sampleStart.Add(d) }
	note := func(inc incident.Incident, tr incident.Transition, seq int, t time.Time) incident.Notification {
		return incident.Notification{Incident: inc, Transition: tr, Seq: seq, Time: t}
	}
	// crash is a notification of the crash-looping pod's incident.
	crash := func(inc incident.Incident, tr incident.Transition, seq int, t time.Time) incident.Notification {
		n := note(inc, tr, seq, t)
		n.Changes = rolledOut()
		return n
	}
	var out []Sample
	titles := map[string]string{
		"firing": "Firing", "updated": "Updated", "repeat": "Repeat (still firing)", "resolved": "Resolved",
		"resolved-deleted": "Resolved: the object was deleted", "silenced": "Muted (silenced)", "unmuted": "Unmuted",
		"grouped": "Grouped workload", "grouped-updated": "Grouped workload, updated", "image-pull": "Image pull", "config-error": "Missing Secret or ConfigMap",
		"max-replicas": "Autoscaler at its maximum", "missed-schedule": "CronJob run missed",
		"cert-expiring": "Certificate expiring", "no-endpoints": "Service with no ready endpoint",
		"volume-filling": "Volume filling up", "long-running": "Job running too long",
		"inhibiting": "Inhibiting: a node explains its pods' incidents", "digest": "Digest",
		"firing-buttons": "Firing, from a Slack app with buttons", "acknowledged": "Acknowledged",
		"updated-acknowledged": "Updated, after an acknowledgement", "silenced-from-slack": "Muted from Slack",
	}
	add := func(name, about string, n incident.Notification) {
		if titles[name] == "" {
			panic("oncalltest: sample " + name + " has no title (docs/messages.md would show an empty heading)")
		}
		out = append(out, Sample{Name: name, Title: titles[name], About: about, Note: n, Now: n.Time})
	}

	firing := crash(crashIncident(), incident.Firing, 1, at(12*time.Minute))
	firing.Context = crashContext("shop/checkout-7d9f8b6c5-x2x9q", firing.Time)
	add("firing", "a new incident, with its crash context and what changed just before: a rollout, and how to undo it", firing)
	add("firing-buttons", "the same firing from a Slack app with Socket Mode (`interactive`): buttons to silence it, acknowledge it and read more of its logs", firing)
	out[len(out)-1].Buttons, out[len(out)-1].SlackOnly = true, true

	inc := crashIncident()
	inc.Facts["restartCount"] = "25"
	inc.Text = "CrashLoopBackOff: Pod shop/checkout-7d9f8b6c5-x2x9q container app: restarted 25 times, last exit code 1 (Error)"
	updated := crash(inc, incident.Updated, 2, at(40*time.Minute))
	updated.Change = "restarts 5 → 25"
	add("updated", "it changed materially (paced: one update may merge many changes)", updated)

	add("repeat", "still firing after the rule's repeat interval", crash(inc, incident.Repeat, 3, at(3*time.Hour+20*time.Minute)))

	// Someone pressed Acknowledge in Slack at 14 min: every sink hears
	// of it, and each later message of the incident says it.
	ana := &incident.Ack{By: "slack:U0ANA", Name: "ana", At: at(14 * time.Minute), Key: "press-1"}
	acked := crash(crashIncident(), incident.Acknowledged, 2, ana.At)
	acked.Incident.Ack = ana
	add("acknowledged", "someone took the incident on (Slack's Acknowledge button): no more repeats; updates and the resolution still come", acked)
	out[len(out)-1].Buttons, out[len(out)-1].Now = true, ana.At.Add(5*time.Second)

	inc = crashIncident()
	inc.Facts["restartCount"] = "25"
	inc.Text = "CrashLoopBackOff: Pod shop/checkout-7d9f8b6c5-x2x9q container app: restarted 25 times, last exit code 1 (Error)"
	inc.Ack = ana
	ackedUpdate := crash(inc, incident.Updated, 3, at(40*time.Minute))
	ackedUpdate.Change = "restarts 5 → 25"
	add("updated-acknowledged", "an update of an acknowledged incident says who is on it", ackedUpdate)
	out[len(out)-1].Buttons = true

	inc = crashIncident()
	inc.ResolvedAt, inc.Ended = at(42*time.Minute), incident.EndedRecovered
	add("resolved", "the problem went away", crash(inc, incident.Resolved, 4, at(42*time.Minute)))

	inc = crashIncident()
	inc.ResolvedAt, inc.Ended = at(15*time.Minute), incident.EndedDeleted
	add("resolved-deleted", "the object was deleted", crash(inc, incident.Resolved, 2, at(15*time.Minute)))

	inc = crashIncident()
	inc.MutedBy, inc.MutedUntil = "silence shop/deploy-checkout", time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	silenced := crash(inc, incident.Silenced, 2, at(20*time.Minute))
	silenced.Change = "silenced until 2026-11-22 12:00 UTC (silence shop/deploy-checkout)"
	add("silenced", "a silence (or annotation, or maintenance window) now mutes an announced incident", silenced)

	// Silence 4 h pressed in Slack at 20 min: the silence says who
	// asked for it (its createdBy).
	inc = crashIncident()
	inc.MutedBy, inc.MutedWho, inc.MutedUntil = "silence shop/slack-5ac2154fa1b2", "slack:U0ANA (ana)", at(4*time.Hour+20*time.Minute)
	fromSlack := crash(inc, incident.Silenced, 2, at(20*time.Minute))
	fromSlack.Change = "silenced until 2026-11-22 14:20 UTC (silence shop/slack-5ac2154fa1b2)"
	add("silenced-from-slack", "a silence someone asked for from Slack (Silence 4 h) mutes the incident: the message says who, and offers to unsilence it", fromSlack)
	out[len(out)-1].Buttons = true

	unmuted := crash(crashIncident(), incident.Updated, 3, at(2*time.Hour))
	unmuted.Unmuted = "silence shop/deploy-checkout"
	add("unmuted", "the mute the channel was told of ended", unmuted)

	grouped := incident.Incident{
		ID: "c0ffee00c0ffee00-1", Occurrence: 1, Fingerprint: "c0ffee00c0ffee00", Rule: "pod-crashloop", Severity: "critical", Reason: "CrashLoopBackOff",
		Object: rules.ObjectRef{Kind: "Deployment", Namespace: "shop", Name: "checkout", UID: "d1"}, Container: "app",
		Facts: map[string]string{"restartCount": "4", "exitCode": "1", "lastReason": "Error", "lastMessage": crashLines[2]},
		Title: "CrashLoopBackOff: Deployment shop/checkout: 3/10 pods (container app)",
		Text:  "CrashLoopBackOff: Pod shop/checkout-7d9f8b6c5-x2x9q container app: restarted 4 times, last exit code 1 (Error)",
		Sinks: []string{"chat"}, FirstSeen: sampleStart, Grouped: true, Total: 10, MemberCount: 3,
		Members:  []string{"Pod/shop/checkout-7d9f8b6c5-4kq2z", "Pod/shop/checkout-7d9f8b6c5-m8d1w", "Pod/shop/checkout-7d9f8b6c5-x2x9q"},
		Mentions: []string{"S0PAYMENTS"}, RunbookURL: "https://runbooks.example.com/crashloop", Links: sampleLinks,
	}
	g := note(grouped, incident.Firing, 1, at(13*time.Minute))
	g.Context = crashContext("shop/checkout-7d9f8b6c5-x2x9q", g.Time)
	g.Changes = configChanged()
	add("grouped", "the chart's default rules group a workload's pods: one incident for the workload; a ConfigMap it reads changed just before, and another workload that reads it fails too", g)

	grouped.MemberCount, grouped.Title = 10, "CrashLoopBackOff: Deployment shop/checkout: 10/10 pods (container app)"
	gu := note(grouped, incident.Updated, 2, at(14*time.Minute))
	gu.Change = "3 → 10 of 10 pods"
	gu.Changes = configChanged()
	add("grouped-updated", "more of the workload's pods have the problem (paced: one update per updateInterval)", gu)

	pull := incident.Incident{
		ID: "1ma9e0000000pull-1", Occurrence: 1, Fingerprint: "1ma9e0000000pull", Rule: "pod-image-pull", Severity: "warning", Reason: "ImagePullBackOff",
		Object: rules.ObjectRef{Kind: "Pod", Namespace: "shop", Name: "web-5f7c9d-abcde", UID: "u2"}, Container: "web",
		Facts: map[string]string{"waitingReason": "ImagePullBackOff", "image": "registry.example/shop/web:1.4.2", "pullError": "registry.example/shop/web:1.4.2: not found",
			"message": `Back-off pulling image "registry.example/shop/web:1.4.2": ErrImagePull: rpc error: code = NotFound desc = failed to pull and unpack image "registry.example/shop/web:1.4.2": registry.example/shop/web:1.4.2: not found`},
		Title: "ImagePullBackOff: Pod shop/web-5f7c9d-abcde container web",
		Text:  `ImagePullBackOff: Pod shop/web-5f7c9d-abcde container web: cannot pull the image "registry.example/shop/web:1.4.2": registry.example/shop/web:1.4.2: not found`,
		Sinks: []string{"chat"}, FirstSeen: sampleStart,
	}
	pn := note(pull, incident.Firing, 1, at(2*time.Minute))
	pn.Changes = nothingChanged("Deployment/web")
	add("image-pull", "an image that will not pull: the image and the registry's answer; nothing changed in the workload just before, which rules a rollout out", pn)

	cfg := incident.Incident{
		ID: "c0nf100000000err-1", Occurrence: 1, Fingerprint: "c0nf100000000err", Rule: "pod-container-error", Severity: "warning", Reason: "CreateContainerConfigError",
		Object: rules.ObjectRef{Kind: "Pod", Namespace: "shop", Name: "web-5f7c9d-fghij", UID: "u3"}, Container: "web",
		Facts: map[string]string{"waitingReason": "CreateContainerConfigError", "image": "registry.example/shop/web:1.4.2", "message": "couldn't find key password in Secret shop/db",
			"missingKind": "Secret", "missingName": "db", "missingKey": "password"},
		Title: "CreateContainerConfigError: Pod shop/web-5f7c9d-fghij container web",
		Text:  "CreateContainerConfigError: Pod shop/web-5f7c9d-fghij container web: key password not found in Secret shop/db",
		Sinks: []string{"chat"}, FirstSeen: sampleStart,
	}
	add("config-error", "a container whose configuration names a missing Secret, ConfigMap or key", note(cfg, incident.Firing, 1, at(time.Minute)))

	hpa := incident.Incident{
		ID: "4a5000000000max-1", Occurrence: 1, Fingerprint: "4a5000000000max", Rule: "hpa-max-replicas", Severity: "warning", Reason: "AtMaxReplicas",
		Object: rules.ObjectRef{Kind: "HorizontalPodAutoscaler", Namespace: "shop", Name: "checkout", UID: "h1"},
		Facts: map[string]string{"maxReplicas": "10", "currentReplicas": "10", "scaleTarget": "Deployment/checkout",
			"metrics": "cpu 92% (target 70%), http_requests_per_second 133.7 per pod (target 100 per pod)"},
		Title: "AtMaxReplicas: HorizontalPodAutoscaler shop/checkout",
		Text:  "AtMaxReplicas: HorizontalPodAutoscaler shop/checkout: Deployment checkout is at its autoscaler's maximum of 10 replicas and still over target: cpu 92% (target 70%), http_requests_per_second 133.7 per pod (target 100 per pod)",
		Sinks: []string{"chat"}, FirstSeen: sampleStart.Add(-15 * time.Minute),
	}
	maxed := note(hpa, incident.Firing, 1, at(0))
	maxed.Context = &incident.Context{Hint: "The workload needs more replicas than maxReplicas allows: raise maxReplicas (if the nodes have room), or find why each replica does less than before."}
	add("max-replicas", "an autoscaler at its maximum for 15 min that still wants more: the workload, each metric beside its target, and what to do", maxed)

	cron := incident.Incident{
		ID: "c40000000000miss-1", Occurrence: 1, Fingerprint: "c40000000000miss", Rule: "cronjob-missed", Severity: "warning", Reason: "MissedSchedule",
		Object: rules.ObjectRef{Kind: "CronJob", Namespace: "shop", Name: "backup", UID: "cj1"},
		Facts: map[string]string{"schedule": "0 * * * *", "missedRuns": "1", "dueAt": "2026-11-22T10:00:00Z", "lastScheduleTime": "2026-11-22T09:00:00Z",
			"activeJob": "backup-29922300"},
		Title: "MissedSchedule: CronJob shop/backup",
		Text:  `MissedSchedule: CronJob shop/backup: the run due at 2026-11-22 10:00 UTC did not start (schedule "0 * * * *"); its last run was scheduled at 2026-11-22 09:00 UTC; the previous run, Job backup-29922300, is still running and concurrencyPolicy is Forbid`,
		Sinks: []string{"chat"}, FirstSeen: sampleStart,
	}
	missed := note(cron, incident.Firing, 1, at(5*time.Minute))
	missed.Context = &incident.Context{Hint: "The previous run is still going and the CronJob forbids two at once: see why Job backup-29922300 takes so long, or delete it; set activeDeadlineSeconds on the job template to bound a run."}
	add("missed-schedule", "a CronJob's run was due and did not start: when it was due, how many runs were missed, and, when a Job still running under `concurrencyPolicy: Forbid` blocks it, which Job", missed)

	job := incident.Incident{
		ID: "10b000000000long-1", Occurrence: 1, Fingerprint: "10b000000000long", Rule: "job-long-running", Severity: "warning", Reason: "JobRunningLong",
		Object: rules.ObjectRef{Kind: "Job", Namespace: "shop", Name: "backup-29922300", UID: "j1"},
		Facts:  map[string]string{"startTime": "2026-11-22T08:00:00Z", "active": "1", "cronJob": "backup", "activeDeadlineSeconds": "21600"},
		Title:  "JobRunningLong: Job shop/backup-29922300",
		Text:   "JobRunningLong: Job shop/backup-29922300: this run of CronJob backup has been running for 2 h (since 2026-11-22 08:00 UTC), 1 pod active; its activeDeadlineSeconds ends it at 2026-11-22 14:00 UTC",
		Sinks:  []string{"chat"}, FirstSeen: sampleStart,
	}
	long := note(job, incident.Firing, 1, at(0))
	long.Context = &incident.Context{Hint: "A Job past its usual time is usually waiting on something (a lock, a network call without a timeout, a volume): kubectl logs job/backup-29922300 -n shop says what; activeDeadlineSeconds in its spec makes the controller end runs that hang."}
	cert := incident.Incident{
		ID: "ce7000000000exp-1", Occurrence: 1, Fingerprint: "ce7000000000exp", Rule: "cert-expiring", Severity: "warning", Reason: "CertificateExpiring",
		Object: rules.ObjectRef{Kind: "Certificate", Namespace: "shop", Name: "shop-tls", UID: "c1"},
		Facts: map[string]string{"notAfter": "2026-12-01T10:00:00Z", "renewalTime": "2026-11-01T10:00:00Z", "expiresIn": "9 days",
			"secretName": "shop-tls", "issuer": "ClusterIssuer letsencrypt-prod", "dnsNames": "shop.example.com, www.shop.example.com"},
		Title: "CertificateExpiring: Certificate shop/shop-tls",
		Text:  "CertificateExpiring: Certificate shop/shop-tls: the certificate expires in 9 days (2026-12-01 10:00 UTC); its renewal was due 2026-11-01 10:00 UTC; not Ready (Failed): The certificate request has failed to complete and will be retried: ACME order failed: 429 rateLimited; for shop.example.com, www.shop.example.com, issued by ClusterIssuer letsencrypt-prod, Secret shop-tls",
		Sinks: []string{"chat"}, FirstSeen: sampleStart,
	}
	expiring := note(cert, incident.Firing, 1, at(0))
	expiring.Context = &incident.Context{Hint: "kubectl describe certificate shop-tls -n shop names the failing CertificateRequest; its Order and Challenges (kubectl get orders,challenges -n shop) say why the issuer refused. To retry at once: cmctl renew shop-tls -n shop."}
	add("cert-expiring", "a cert-manager Certificate within 14 days of its end: when it expires, that its renewal was due, cert-manager's reason, its names and issuer", expiring)

	svc := incident.Incident{
		ID: "5e7000000000ept-1", Occurrence: 1, Fingerprint: "5e7000000000ept", Rule: "service-no-endpoints", Severity: "warning", Reason: "NoReadyEndpoints",
		Object: rules.ObjectRef{Kind: "Service", Namespace: "shop", Name: "search", UID: "s1"},
		Facts:  map[string]string{"selector": "app=search", "notReady": "2", "workloads": "Deployment/search"},
		Title:  "NoReadyEndpoints: Service shop/search",
		Text:   "NoReadyEndpoints: Service shop/search: the Service has no ready endpoint: 2 pods not ready (failing their readiness probes, or shutting down); it sends to Deployment/search",
		Sinks:  []string{"chat"}, FirstSeen: sampleStart,
	}
	empty := note(svc, incident.Firing, 1, at(5*time.Minute))
	empty.Context = &incident.Context{Hint: "Its pods run but fail their readiness probe: kubectl describe pod shows the probe's last failure; kubectl get endpointslices -l kubernetes.io/service-name=search -n shop lists them."}
	add("no-endpoints", "a Service with no ready endpoint for 5 min, when no incident of its pods explains it: how many are not ready, and the workload it sends to", empty)

	disk := incident.Incident{
		ID: "d15c00000000f11-1", Occurrence: 1, Fingerprint: "d15c00000000f11", Rule: "volume-filling", Severity: "warning", Reason: "VolumeFillingUp",
		Object: rules.ObjectRef{Kind: "PersistentVolumeClaim", Namespace: "shop", Name: "pgdata-postgres-0", UID: "v1"},
		Facts: map[string]string{"percentFull": "71", "available": "6227702579", "capacity": "21474836480", "fullIn": "10800", "node": "node-3", "pod": "postgres-0",
			"threshold": "80", "critical": "90", "horizon": "24 h"},
		Title: "VolumeFillingUp: PersistentVolumeClaim shop/pgdata-postgres-0",
		Text:  "VolumeFillingUp: PersistentVolumeClaim shop/pgdata-postgres-0: the volume is 71% full: 5.8 GiB free of 20 GiB; filling at 1.9 GiB/h over the last 1 h, it is full in about 3 h (around 13:00 UTC); mounted by pod postgres-0 on node node-3",
		Sinks: []string{"chat"}, FirstSeen: sampleStart,
	}
	filling := note(disk, incident.Firing, 1, at(0))
	filling.Context = &incident.Context{Hint: "Find what grows, inside the pod (the mount path is in its spec; images without a shell have no du): kubectl exec postgres-0 -n shop -- sh -c 'du -xsh <mount path>/*'. If the data is needed, expand the claim (its StorageClass must allow volume expansion): kubectl patch pvc pgdata-postgres-0 -n shop -p '{\"spec\":{\"resources\":{\"requests\":{\"storage\":\"<larger>\"}}}}'. If not, remove what the application no longer needs through the application itself (its retention, its cleanup): deleting a database's files by hand can corrupt it."}
	add("volume-filling", "a claim's volume that, at the rate it filled over the last hour, will be full within the rule's horizon, said before it crosses its threshold: how full it is, how much is free, when it will be full, and the pod and node that mount it", filling)

	add("long-running", "a Job still running past its rule's bound (`for:`): for how long, the CronJob it is a run of, and when its own deadline would end it", long)

	node := incident.Incident{
		ID: "0de0000000000n7-1", Occurrence: 1, Fingerprint: "0de0000000000n7", Rule: "node-notready", Severity: "critical", Reason: "NodeNotReady",
		Object: rules.ObjectRef{Kind: "Node", Name: "node-7", UID: "n7"},
		Facts:  map[string]string{"message": "Kubelet stopped posting node status."},
		Title:  "NodeNotReady: Node node-7", Text: "NodeNotReady: Node node-7: Kubelet stopped posting node status.",
		Sinks: []string{"chat"}, FirstSeen: sampleStart, Covers: 12, NotifiedCovers: 12,
	}
	inhibit := note(node, incident.Updated, 2, at(5*time.Minute))
	inhibit.Change = "explains 0 → 12 other incidents (muted while it is open)"
	add("inhibiting", "a node's message says how many pods' incidents it explains (those are muted)", inhibit)

	var members []incident.Notification
	for _, s := range out {
		if s.Note.Transition == incident.Firing && !s.SlackOnly {
			members = append(members, s.Note)
		}
	}
	digest := incident.Notification{Transition: incident.Digest, Time: at(15 * time.Minute), Digest: members,
		Incident: incident.Incident{Sinks: []string{"chat"}}}
	add("digest", "many incidents in one message (herald's first start, or a storm under a sink's rate limit)", digest)
	return out
}

// Named is the sample notification of that name, for a sink's tests of
// one incident's life (t fails when there is none).
func Named(t testing.TB, name string) incident.Notification {
	t.Helper()
	for _, s := range Samples() {
		if s.Name == name {
			return s.Note
		}
	}
	t.Fatalf("no sample %q", name)
	return incident.Notification{}
}
