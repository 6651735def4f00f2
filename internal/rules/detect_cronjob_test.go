package rules

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestCronJobWake: an unchanged CronJob is looked at again when its next
// run is due and late (its starting deadline, if any, passed), and not
// at all while a run is missed already (the detection holds) or while it
// is suspended. The time comes to the reconcile loop as the Evaluation's
// Wake.
func TestCronJobWake(t *testing.T) {
	tests := []struct {
		file string
		want time.Duration
	}{
		{"cronjob-ran.yaml", 5*time.Minute + time.Second},                     // due 00:15
		{"cronjob-deadline.yaml", 5*time.Minute + time.Second},                // due 00:00, may start until 00:15
		{"cronjob-timezone.yaml", 4*time.Hour + 50*time.Minute + time.Second}, // midnight in New York, 05:00 UTC
		{"cronjob-missed.yaml", 0},
		{"cronjob-suspended.yaml", 0},
		{"cronjob-new-no-zone.yaml", 24*time.Hour - 10*time.Minute + time.Second}, // the second midnight
	}
	set := compile(t, ruleYAML("CronJob", "missed-schedule", ""))
	for _, tt := range tests {
		if got := cronWake(loadObject(t, tt.file), Params{}, now); got != tt.want {
			t.Errorf("%s: wake after %s, want %s", tt.file, got, tt.want)
		}
		if ev := set.EvaluateWithExclusions("CronJob", loadObject(t, tt.file), now, nil); ev.Wake != tt.want {
			t.Errorf("%s: the evaluation's wake %s, want %s", tt.file, ev.Wake, tt.want)
		}
	}
}

// TestMissedScheduleFacts: the detection says when the first missed run
// was due (in the CronJob's time zone), how many did not start, and
// begins at that due time (for: counts from it).
func TestMissedScheduleFacts(t *testing.T) {
	cj := loadObject(t, "cronjob-missed.yaml").(*batchv1.CronJob)
	d, err := detectMissedSchedule(cj, Params{}, now)
	if err != nil || len(d) != 1 {
		t.Fatalf("got %+v, %v", d, err)
	}
	if due := time.Date(2026, 11, 21, 23, 0, 0, 0, time.UTC); !d[0].Since.Equal(due) {
		t.Errorf("since %s, want the first missed due time %s", d[0].Since, due)
	}
	if f := d[0].Facts; f["missedRuns"] != "2" || f["dueAt"] != "2026-11-21T23:00:00Z" || f["lastScheduleTime"] != "2026-11-21T22:00:00Z" || f["schedule"] != "0 * * * *" {
		t.Errorf("facts %v", f)
	}

	// In a time zone: due times are said in it.
	cj.Spec.TimeZone = ptr.To("Asia/Tokyo") // 09:00 JST is 00:00 UTC
	cj.Spec.Schedule = "0 9 * * *"
	cj.Status.LastScheduleTime = &metav1.Time{Time: time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)}
	d, err = detectMissedSchedule(cj, Params{}, now)
	if err != nil || len(d) != 1 || d[0].Facts["dueAt"] != "2026-11-22T09:00:00+09:00" || !strings.Contains(d[0].Detail, "2026-11-22 09:00 JST") {
		t.Errorf("in Asia/Tokyo: %+v, %v", d, err)
	}

	// A schedule of every minute missed for a month: counted up to a bound.
	cj.Spec.TimeZone, cj.Spec.Schedule = nil, "* * * * *"
	cj.Status.LastScheduleTime = &metav1.Time{Time: now.Add(-30 * 24 * time.Hour)}
	d, _ = detectMissedSchedule(cj, Params{}, now)
	if len(d) != 1 || d[0].Facts["missedRuns"] != "over 100" {
		t.Errorf("a month of minutes: %+v", d)
	}

	// What the controller itself would refuse is an error, said once per
	// rule by the reconcile loop; the other rules go on.
	cj.Spec.Schedule = "every day at noon"
	if _, err := detectMissedSchedule(cj, Params{}, now); err == nil || !strings.Contains(err.Error(), `schedule "every day at noon"`) {
		t.Errorf("a bad schedule: %v", err)
	}
	cj.Spec.Schedule, cj.Spec.TimeZone = "0 * * * *", ptr.To("Mars/Olympus_Mons")
	if _, err := detectMissedSchedule(cj, Params{}, now); err == nil || !strings.Contains(err.Error(), "Mars/Olympus_Mons") {
		t.Errorf("an unknown time zone: %v", err)
	}
}

// BenchmarkMissedSchedule: one evaluation of a CronJob of every 5
// minutes that ran on time ("ran"), and the worst case, one of every
// minute whose runs stopped a month ago (the walk that counts missed runs
// stops at its bound).
func BenchmarkMissedSchedule(b *testing.B) {
	ran := loadObject(b, "cronjob-ran.yaml").(*batchv1.CronJob)
	stopped := loadObject(b, "cronjob-missed.yaml").(*batchv1.CronJob)
	stopped.Spec.Schedule = "* * * * *"
	stopped.Status.LastScheduleTime = &metav1.Time{Time: now.Add(-30 * 24 * time.Hour)}
	for _, c := range []struct {
		name string
		cj   *batchv1.CronJob
	}{{"ran", ran}, {"stopped-a-month-ago", stopped}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				detectMissedSchedule(c.cj, Params{}, now)
				cronWake(c.cj, Params{}, now)
			}
		})
	}
}

// TestHostileSchedules: what the API server would refuse, or takes but
// nothing real writes, is an error or nothing — never a panic, a false
// alarm or an unbounded log line. robfig/cron panics on a schedule that
// names a time zone and nothing after it.
func TestHostileSchedules(t *testing.T) {
	for _, schedule := range []string{"TZ=UTC", "CRON_TZ=Europe/Rome", "TZ=", "CRON_TZ=", "TZ=UTC\t*"} {
		cj := loadObject(t, "cronjob-missed.yaml").(*batchv1.CronJob)
		cj.Spec.Schedule = schedule
		if _, _, err := cronSchedule(cj); err == nil || !strings.Contains(err.Error(), "names a time zone and nothing else") {
			t.Errorf("schedule %q: %v", schedule, err)
		}
	}

	// A schedule as long as the object allows is not parsed; an error
	// quoting a long one is bounded before it reaches the log.
	set := compile(t, ruleYAML("CronJob", "missed-schedule", ""))
	for _, schedule := range []string{"0," + strings.Repeat("0,", 600) + "0 * * * *", strings.Repeat("x", 1000) + " * * * *"} {
		cj := loadObject(t, "cronjob-missed.yaml").(*batchv1.CronJob)
		cj.Spec.Schedule = schedule
		ev := set.EvaluateWithExclusions("CronJob", cj, now, nil)
		if len(ev.Errors) != 1 || len(ev.Findings) != 0 || ev.Wake != 0 {
			t.Fatalf("a schedule of %d bytes: %+v", len(schedule), ev)
		}
		if n := utf8.RuneCountInString(ev.Errors[0].Err.Error()); n > MaxFact {
			t.Errorf("a schedule of %d bytes: an error of %d runes, want at most %d", len(schedule), n, MaxFact)
		}
	}

	// startingDeadlineSeconds past what a Duration holds: the run may
	// start for ten years, not for a negative time.
	cj := loadObject(t, "cronjob-missed.yaml").(*batchv1.CronJob)
	cj.Spec.StartingDeadlineSeconds = ptr.To[int64](9223372037)
	if d, err := detectMissedSchedule(cj, Params{}, now); err != nil || len(d) != 0 {
		t.Errorf("a deadline of 292 years: %+v, %v", d, err)
	}
}

// TestScheduleInAnotherZone: a CronJob without spec.timeZone whose last
// run is not a time its schedule gives in UTC (the controller runs in
// another zone) is never said to miss a run; the rule's error says why
// and what to set. With spec.timeZone named, a last run off the schedule
// means the schedule changed: nothing until the next run, and no error.
func TestScheduleInAnotherZone(t *testing.T) {
	set := compile(t, ruleYAML("CronJob", "missed-schedule", ""))
	cj := loadObject(t, "cronjob-other-zone.yaml").(*batchv1.CronJob)
	ev := set.EvaluateWithExclusions("CronJob", cj, now, nil)
	if len(ev.Findings) != 0 || ev.Wake != 0 || len(ev.Errors) != 1 || !strings.Contains(ev.Errors[0].Err.Error(), "until spec.timeZone is set on it") {
		t.Errorf("no zone: %+v", ev)
	}
	cj.Spec.TimeZone = ptr.To("Etc/UTC")
	if ev := set.EvaluateWithExclusions("CronJob", cj, now, nil); len(ev.Findings) != 0 || ev.Wake != 0 || len(ev.Errors) != 0 {
		t.Errorf("a zone named, a schedule changed: %+v", ev)
	}
}
