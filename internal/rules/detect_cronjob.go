package rules

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// maxMissedCounted bounds the walk over a schedule's due times that
// counts missed runs: a schedule of every minute missed for a month
// would be 43,200 steps of about 1 µs; past this many, the count says "over".
const maxMissedCounted = 100

// maxSchedule bounds the schedule herald reads: the API server takes any
// length the object allows, and a schedule is parsed at each evaluation.
// Real ones are a few dozen bytes.
const maxSchedule = 1 << 10

// maxStartingDeadline caps startingDeadlineSeconds (the API server takes
// any non-negative int64, which as a Duration would overflow).
const maxStartingDeadline = 10 * 365 * 24 * time.Hour

// detectMissedSchedule fires while a CronJob has a run that was due and
// never started: the first due time after its last scheduled run (or its
// creation) has passed, plus startingDeadlineSeconds when set (the
// controller may start a run late until then). It ends when a run is
// scheduled. Suspended CronJobs are left out. The schedule is read as the
// CronJob controller reads it (standard cron, in spec.timeZone if set,
// else UTC).
func detectMissedSchedule(obj runtime.Object, _ Params, now time.Time) ([]Detection, error) {
	cj, ok := obj.(*batchv1.CronJob)
	if !ok {
		return nil, fmt.Errorf("missed-schedule detector got %T", obj)
	}
	m, err := cronMissed(cj, now)
	if err != nil || m == nil {
		return nil, err
	}
	return []Detection{*m}, nil
}

// cronWake is how long until the CronJob's next run is due and late
// enough to count as missed, if nothing changes: the object must be
// evaluated again then, though it will not have changed.
func cronWake(obj runtime.Object, _ Params, now time.Time) time.Duration {
	cj, ok := obj.(*batchv1.CronJob)
	if !ok {
		return 0
	}
	r, ok, _ := readCron(cj)
	if !ok || !r.late.After(now) {
		return 0 // nothing to watch for, or missed already (the detection holds)
	}
	return r.late.Sub(now) + time.Second
}

// cronReading is a CronJob's schedule read as the controller reads it,
// and its next run: when it is due, and when it counts as missed.
type cronReading struct {
	sched     cron.Schedule
	loc       *time.Location
	due, late time.Time
}

// readCron reads cj for the detector and its wake alike. ok is false when
// there is no run to watch for: deleted, suspended, never due again, or
// a schedule herald cannot read as the controller does (err then says
// why, when the operator should hear of it).
func readCron(cj *batchv1.CronJob) (r cronReading, ok bool, err error) {
	if skipCron(cj) {
		return r, false, nil
	}
	if r.sched, r.loc, err = cronSchedule(cj); err != nil {
		return r, false, err
	}
	if err := readable(r.sched, cj); err != nil {
		if errors.Is(err, errUnreadable) {
			return r, false, nil
		}
		return r, false, err
	}
	r.due, r.late = dueAndLate(r.sched, cj)
	return r, !r.late.IsZero(), nil
}

func skipCron(cj *batchv1.CronJob) bool {
	return cj.DeletionTimestamp != nil || (cj.Spec.Suspend != nil && *cj.Spec.Suspend)
}

// cronSchedule parses the CronJob's schedule in its time zone.
func cronSchedule(cj *batchv1.CronJob) (cron.Schedule, *time.Location, error) {
	// Without a time zone the controller reads the schedule in its own
	// (kube-controller-manager's) zone: UTC on the control planes herald
	// knows of.
	loc := time.UTC
	if tz := cj.Spec.TimeZone; tz != nil && *tz != "" {
		l, err := time.LoadLocation(*tz)
		if err != nil {
			return nil, nil, fmt.Errorf("CronJob %s/%s: time zone %q: %w", cj.Namespace, cj.Name, *tz, err)
		}
		loc = l
	}
	if len(cj.Spec.Schedule) > maxSchedule {
		return nil, nil, fmt.Errorf("CronJob %s/%s: schedule of %d bytes: herald reads schedules of up to %d", cj.Namespace, cj.Name, len(cj.Spec.Schedule), maxSchedule)
	}
	if tzOnly(cj.Spec.Schedule) {
		// robfig/cron indexes past the zone for the fields after it and
		// panics when there are none.
		return nil, nil, fmt.Errorf("CronJob %s/%s: schedule %q names a time zone and nothing else", cj.Namespace, cj.Name, cj.Spec.Schedule)
	}
	sched, err := cron.ParseStandard(cj.Spec.Schedule)
	if err != nil {
		return nil, nil, fmt.Errorf("CronJob %s/%s: schedule %q: %w", cj.Namespace, cj.Name, cj.Spec.Schedule, err)
	}
	if s, ok := sched.(*cron.SpecSchedule); ok && !strings.Contains(cj.Spec.Schedule, "TZ=") {
		s.Location = loc
	}
	return sched, loc, nil
}

// tzOnly: a schedule that starts with a time zone (TZ=, CRON_TZ=) and
// has no space after it, so no fields.
func tzOnly(schedule string) bool {
	return (strings.HasPrefix(schedule, "TZ=") || strings.HasPrefix(schedule, "CRON_TZ=")) && !strings.Contains(schedule, " ")
}

// readable says whether the schedule, read in the zone herald reads it
// in, gives the time of the CronJob's last run: the controller writes
// the due time it ran. If not, the controller reads it in another zone
// (a control plane not on UTC, for a CronJob without spec.timeZone) or
// the schedule changed since: herald cannot tell when the next run is
// due, and says nothing rather than something wrong — but for a CronJob
// without a zone it says why, as the rule's error, for the operator to
// set one.
func readable(sched cron.Schedule, cj *batchv1.CronJob) error {
	last := cj.Status.LastScheduleTime
	if last == nil || sched.Next(last.Add(-time.Second)).Equal(last.Time) {
		return nil
	}
	if ownZone(cj) {
		return errUnreadable // the schedule changed since the last run: wait for the next
	}
	return fmt.Errorf("CronJob %s/%s: its last run, %s, is not a time its schedule %q gives in UTC: the control plane's CronJob controller reads schedules in another time zone (or the schedule changed since that run); herald cannot tell when its runs are due until spec.timeZone is set on it",
		cj.Namespace, cj.Name, last.UTC().Format(time.RFC3339), cj.Spec.Schedule)
}

// errUnreadable: nothing to say until the CronJob runs again.
var errUnreadable = errors.New("unreadable")

// ownZone: the CronJob names its time zone, so herald reads its schedule
// as the controller does, wherever the controller runs.
func ownZone(cj *batchv1.CronJob) bool {
	return cj.Spec.TimeZone != nil && *cj.Spec.TimeZone != ""
}

// dueAndLate are the first due time after the CronJob's last run (or
// creation), and when a run due then counts as missed: after its
// starting deadline — and, for a CronJob that has never run and names no
// time zone, not before the due time after it, since the first may be
// one in a zone the controller does not read it in (its first run, in
// the controller's zone, comes within a day and tells: readable).
func dueAndLate(sched cron.Schedule, cj *batchv1.CronJob) (due, late time.Time) {
	due = sched.Next(cronSince(cj))
	late = due
	if cj.Status.LastScheduleTime == nil && !ownZone(cj) && !due.IsZero() {
		late = sched.Next(due)
	}
	if late.IsZero() {
		return due, late
	}
	return due, late.Add(startingDeadline(cj))
}

// cronSince is when the CronJob last ran as scheduled, or was created:
// runs due before then are not its to miss.
func cronSince(cj *batchv1.CronJob) time.Time {
	since := cj.CreationTimestamp.Time
	if t := cj.Status.LastScheduleTime; t != nil && t.After(since) {
		since = t.Time
	}
	return since
}

func startingDeadline(cj *batchv1.CronJob) time.Duration {
	if d := cj.Spec.StartingDeadlineSeconds; d != nil && *d > 0 {
		return time.Duration(min(*d, int64(maxStartingDeadline/time.Second))) * time.Second
	}
	return 0
}

// cronMissed is the detection of a run that was due and did not start,
// or nil.
func cronMissed(cj *batchv1.CronJob, now time.Time) (*Detection, error) {
	r, ok, err := readCron(cj)
	if !ok || !now.After(r.late) {
		return nil, err
	}
	sched, loc, due := r.sched, r.loc, r.due
	missed := 0
	for t := due; !t.IsZero() && t.Before(now) && missed <= maxMissedCounted; t = sched.Next(t) {
		missed++
	}
	count := strconv.Itoa(missed)
	if missed > maxMissedCounted {
		count = "over " + strconv.Itoa(maxMissedCounted)
	}
	facts := map[string]string{
		"schedule":   cj.Spec.Schedule,
		"missedRuns": count,
		"dueAt":      due.In(loc).Format(time.RFC3339),
	}
	if tz := cj.Spec.TimeZone; tz != nil && *tz != "" {
		facts["timeZone"] = *tz
	}
	last := "it has never run"
	if t := cj.Status.LastScheduleTime; t != nil {
		facts["lastScheduleTime"] = t.UTC().Format(time.RFC3339)
		last = "its last run was scheduled at " + t.In(loc).Format("2006-01-02 15:04 MST")
	}
	runs := "the run due at " + due.In(loc).Format("2006-01-02 15:04 MST") + " did not start"
	if missed > 1 {
		runs = count + " runs due since " + due.In(loc).Format("2006-01-02 15:04 MST") + " did not start"
	}
	detail := runs + " (schedule " + strconv.Quote(cj.Spec.Schedule) + "); " + last
	if len(cj.Status.Active) > 0 && cj.Spec.ConcurrencyPolicy == batchv1.ForbidConcurrent {
		facts["activeJob"] = cj.Status.Active[0].Name
		detail += "; the previous run, Job " + cj.Status.Active[0].Name + ", is still running and concurrencyPolicy is Forbid"
	}
	return &Detection{Reason: "MissedSchedule", Since: due, Facts: facts, Detail: detail}, nil
}
