package rules

import (
	"strings"
	"testing"
	"time"

	"github.com/herald-k8s/herald/config"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestLongRunningBoundIsFor: the rule's for: is the bound (1h unless
// set), counted from the Job's start, so a Job started 1h30 ago fires at
// once and one started 5 min ago waits; the message says how long it has
// run, which CronJob it belongs to and when its own deadline ends it.
func TestLongRunningBoundIsFor(t *testing.T) {
	set := compile(t, ruleYAML("Job", "long-running", ""))
	got, errs := set.Evaluate("Job", loadObject(t, "job-running.yaml"), now, nil)
	if len(errs) > 0 || len(got) != 1 {
		t.Fatalf("got %+v, %v", got, errs)
	}
	f := got[0]
	if f.For != time.Hour || !f.Since.Equal(time.Date(2026, 11, 21, 22, 40, 0, 0, time.UTC)) {
		t.Errorf("for %s since %s, want 1h from status.startTime", f.For, f.Since)
	}
	if f.Facts["cronJob"] != "backup" || f.Facts["active"] != "1" || f.Facts["startTime"] != "2026-11-21T22:40:00Z" || f.Facts["activeDeadlineSeconds"] != "14400" {
		t.Errorf("facts %v", f.Facts)
	}
	for _, want := range []string{"this run of CronJob backup has been running for 1 h 30 min", "1 pod active", "activeDeadlineSeconds ends it at 2026-11-22 02:40 UTC"} {
		if !strings.Contains(f.Text, want) {
			t.Errorf("text %q lacks %q", f.Text, want)
		}
	}

	set = compile(t, ruleYAML("Job", "long-running", ", for: 6h"))
	got, _ = set.Evaluate("Job", loadObject(t, "job-started.yaml"), now, nil)
	if len(got) != 1 || got[0].For != 6*time.Hour || !strings.Contains(got[0].Text, "the Job has been running for 5 min") || !strings.Contains(got[0].Text, "2 pods active") {
		t.Errorf("for: 6h on a Job started 5 min ago: %+v", got)
	}
}

// TestLongRunningNeedsABound: for: 0s would alert on every Job that
// starts; it is refused where it is written, saying what to give.
func TestLongRunningNeedsABound(t *testing.T) {
	_, err := config.Parse("herald.yaml", []byte(ruleYAML("Job", "long-running", ", for: 0s")))
	if err == nil {
		cfg, _ := config.Parse("herald.yaml", []byte(ruleYAML("Job", "long-running", ", for: 0s")))
		_, err = Compile(cfg)
	}
	if err == nil || !strings.Contains(err.Error(), "herald.yaml:2:") || !strings.Contains(err.Error(), "rules[0].for") || !strings.Contains(err.Error(), "how long a Job may run") {
		t.Fatalf("for: 0s gave %v, want an error at rules[0].for saying what for: means", err)
	}
}

// TestLongRunningStates: a Job stops running for this rule when it is
// deleted, suspended by spec before its controller says so, or finished
// by completion time alone; the deadline herald reads is capped.
func TestLongRunningStates(t *testing.T) {
	j := loadObject(t, "job-running.yaml").(*batchv1.Job)
	j.Spec.ActiveDeadlineSeconds = ptr.To[int64](1 << 62)
	got, err := detectLongRunning(j, Params{}, now)
	if err != nil || len(got) != 1 || !strings.Contains(got[0].Detail, "activeDeadlineSeconds ends it at") {
		t.Fatalf("an enormous deadline: %+v, %v", got, err)
	}
	for name, change := range map[string]func(*batchv1.Job){
		"deleted":     func(j *batchv1.Job) { j.DeletionTimestamp = &metav1.Time{Time: now} },
		"suspend":     func(j *batchv1.Job) { j.Spec.Suspend = ptr.To(true) },
		"completed":   func(j *batchv1.Job) { j.Status.CompletionTime = &metav1.Time{Time: now} },
		"not started": func(j *batchv1.Job) { j.Status.StartTime = nil },
		"succeeding": func(j *batchv1.Job) {
			j.Status.Conditions = append(j.Status.Conditions, batchv1.JobCondition{Type: batchv1.JobSuccessCriteriaMet, Status: "True"})
		},
	} {
		j := loadObject(t, "job-running.yaml").(*batchv1.Job)
		change(j)
		if got, _ := detectLongRunning(j, Params{}, now); len(got) != 0 {
			t.Errorf("%s: %+v", name, got)
		}
	}
}
