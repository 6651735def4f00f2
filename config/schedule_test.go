package config

import (
	"strings"
	"testing"
	"time"
)

func TestScheduleOpen(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	nights := Schedule{TimeZone: "Europe/Berlin", Windows: []Window{{Days: []string{"mon-fri"}, From: "22:00", To: "06:00"}}}
	everyNight := Schedule{TimeZone: "Europe/Berlin", Windows: []Window{{From: "22:00", To: "06:00"}}}
	weekend := Schedule{Windows: []Window{{Days: []string{"sat", "sun"}}}}
	backToBack := Schedule{Windows: []Window{{Days: []string{"fri"}, From: "20:00"}, {Days: []string{"sat-sun"}}, {Days: []string{"mon"}, To: "08:00"}}}
	for _, s := range []*Schedule{&nights, &everyNight, &weekend, &backToBack} {
		var errs []string
		s.compile("schedule", func(path, format string, args ...any) { errs = append(errs, path) })
		if len(errs) > 0 {
			t.Fatalf("%+v: %v", s, errs)
		}
	}
	at := func(loc *time.Location, y int, m time.Month, d, h, min int) time.Time {
		return time.Date(y, m, d, h, min, 0, 0, loc)
	}
	cases := []struct {
		name  string
		s     *Schedule
		now   time.Time
		until time.Time // zero: closed
	}{
		// 2026-11-23 is a Monday.
		{"a weeknight, before midnight", &nights, at(berlin, 2026, 11, 23, 23, 0), at(berlin, 2026, 11, 24, 6, 0)},
		{"a weeknight, after midnight", &nights, at(berlin, 2026, 11, 24, 5, 59), at(berlin, 2026, 11, 24, 6, 0)},
		{"at its end", &nights, at(berlin, 2026, 11, 24, 6, 0), time.Time{}},
		{"a working day", &nights, at(berlin, 2026, 11, 24, 12, 0), time.Time{}},
		{"friday night runs into saturday", &nights, at(berlin, 2026, 11, 28, 3, 0), at(berlin, 2026, 11, 28, 6, 0)},
		{"saturday night is not a window", &nights, at(berlin, 2026, 11, 28, 23, 0), time.Time{}},
		{"the zone counts: 21:30 UTC is 22:30 in Berlin", &nights, at(time.UTC, 2026, 11, 23, 21, 30), at(berlin, 2026, 11, 24, 6, 0)},
		// Summer time ends at 03:00 on 2026-10-25: that night is 9 hours.
		{"across a DST change, 06:00 stays 06:00", &everyNight, at(berlin, 2026, 10, 24, 23, 0), at(berlin, 2026, 10, 25, 6, 0)},
		{"a whole weekend, as one", &weekend, at(time.UTC, 2026, 11, 28, 10, 0), at(time.UTC, 2026, 11, 30, 0, 0)},
		{"back-to-back windows end at the last one's end", &backToBack, at(time.UTC, 2026, 11, 27, 21, 0), at(time.UTC, 2026, 11, 30, 8, 0)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			until, open := c.s.Open(c.now)
			if open != !c.until.IsZero() || !until.Equal(c.until) {
				t.Errorf("Open(%s) = %s, %v; want %s", c.now, until, open, c.until)
			}
		})
	}
}

func TestScheduleErrors(t *testing.T) {
	_, err := Parse("herald.yaml", []byte(`
rules:
  - name: batch
    kind: Job
    detector: job-failed
    sinks: [hook]
    schedule:
      timeZone: Mars/Olympus
      windows:
        - {days: [mon-fry], from: "25:00", to: "6am"}
        - {from: "10:00", to: "10:00"}
sinks:
  - {name: hook, webhook: {url: http://127.0.0.1:1/x}}
`))
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		`herald.yaml:8:17: rules[0].schedule.timeZone: unknown time zone "Mars/Olympus"`,
		`rules[0].schedule.windows[0].days[0]: "mon-fry" is not a weekday`,
		`rules[0].schedule.windows[0].from: "25:00" is not a time of day`,
		`rules[0].schedule.windows[0].to: "6am" is not a time of day`,
		`rules[0].schedule.windows[1].to: the window from 10:00 to 10:00 is empty`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the errors do not say %q:\n%v", want, err)
		}
	}
}
