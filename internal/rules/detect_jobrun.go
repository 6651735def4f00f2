package rules

import (
	"fmt"
	"strconv"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// detectLongRunning reports a Job that is running: started, not
// suspended, neither finished nor finishing. The problem is its running
// too long, and the rule's for: says how long is too long (1h by
// default), counted from status.startTime: a Job that hangs (a lock never
// released, a network call without a timeout, a backup waiting on a
// volume) fails nothing and crashes nothing, so no other rule sees it. A
// Job with activeDeadlineSeconds is ended by its controller at that
// deadline, and job-failed says so; this rule speaks before that when its
// for: is shorter. The detection ends when the Job completes, fails or is
// suspended.
func detectLongRunning(obj runtime.Object, _ Params, now time.Time) ([]Detection, error) {
	j, ok := obj.(*batchv1.Job)
	if !ok {
		return nil, fmt.Errorf("long-running detector got %T", obj)
	}
	if j.DeletionTimestamp != nil || j.Status.StartTime == nil || jobSuspended(j) || jobFinishing(j) {
		return nil, nil
	}
	since := j.Status.StartTime.Time
	running := now.Sub(since).Truncate(time.Second)
	facts := map[string]string{
		"startTime": since.UTC().Format(time.RFC3339),
		"active":    strconv.Itoa(int(j.Status.Active)),
	}
	what := "the Job"
	if cj := cronJobOf(j); cj != "" {
		facts["cronJob"] = cj
		what = "this run of CronJob " + cj
	}
	detail := fmt.Sprintf("%s has been running for %s (since %s), %d %s active",
		what, window(max(running, 0)), since.UTC().Format("2006-01-02 15:04 MST"), j.Status.Active, plural(int(j.Status.Active), "pod", "pods"))
	if d := j.Spec.ActiveDeadlineSeconds; d != nil && *d > 0 {
		facts["activeDeadlineSeconds"] = strconv.FormatInt(*d, 10)
		detail += fmt.Sprintf("; its activeDeadlineSeconds ends it at %s", since.Add(time.Duration(min(*d, maxDeadlineSeconds))*time.Second).UTC().Format("2006-01-02 15:04 MST"))
	}
	return []Detection{{Reason: "JobRunningLong", Since: since, Facts: facts, Detail: detail}}, nil
}

// maxDeadlineSeconds caps activeDeadlineSeconds as herald reads it (the
// API server takes any positive int64, which as a Duration overflows).
const maxDeadlineSeconds = 10 * 365 * 24 * 3600

// jobSuspended: spec.suspend, or the controller's Suspended condition
// (the pods of a Job just suspended may still be terminating).
func jobSuspended(j *batchv1.Job) bool {
	if j.Spec.Suspend != nil && *j.Spec.Suspend {
		return true
	}
	return jobCondition(j, batchv1.JobSuspended)
}

// jobFinishing: the Job has completed or failed, or its controller has
// decided it will (FailureTarget, SuccessCriteriaMet: its pods are being
// stopped). Not running, whatever its active count says.
func jobFinishing(j *batchv1.Job) bool {
	for _, t := range []batchv1.JobConditionType{batchv1.JobComplete, batchv1.JobFailed, batchv1.JobFailureTarget, batchv1.JobSuccessCriteriaMet} {
		if jobCondition(j, t) {
			return true
		}
	}
	return j.Status.CompletionTime != nil
}

func jobCondition(j *batchv1.Job, t batchv1.JobConditionType) bool {
	for _, c := range j.Status.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// cronJobOf names the CronJob that made j, or "".
func cronJobOf(j *batchv1.Job) string {
	for _, o := range j.OwnerReferences {
		if o.Kind == "CronJob" {
			return o.Name
		}
	}
	return ""
}
