package incident

import (
	"fmt"
	"time"
)

// Duration says d the way a person reads it in a channel: "45 s",
// "12 min", "3 h 20 min", "2 d 4 h". Two units at most, the smaller one
// dropped when it is zero: the precision of "12m0s" (Go's) or
// "3h20m17.25s" is noise in an alert. It lives here, the lowest package
// that writes words for people (an update's change), and every sink says
// durations with it (sinks.Duration), so one reads the same in Slack,
// Teams, a terminal and a payload's change.
func Duration(d time.Duration) string {
	if d < 0 {
		d = -d
	}
	d = d.Round(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%d s", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d/time.Minute))
	case d < 24*time.Hour:
		return twoUnits(int(d/time.Hour), "h", int(d%time.Hour/time.Minute), "min")
	}
	return twoUnits(int(d/(24*time.Hour)), "d", int(d%(24*time.Hour)/time.Hour), "h")
}

func twoUnits(big int, bigUnit string, small int, smallUnit string) string {
	if small == 0 {
		return fmt.Sprintf("%d %s", big, bigUnit)
	}
	return fmt.Sprintf("%d %s %d %s", big, bigUnit, small, smallUnit)
}
