package slackact

import (
	"slices"
	"strconv"
	"time"

	"github.com/herald-k8s/herald/internal/actions"
)

// limited says why a press is refused for its pace ("" when it is not):
// a person presses at most pressesPerMinute times a minute, and More logs
// answers an incident once every moreLogsEvery (the reply stays in the
// thread), so nobody can spend the crash context's request budget or
// flood the channel.
func (r *Receiver) limited(p actions.Press) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	if len(r.presses) > maxTracked {
		clear(r.presses)
	}
	recent := slices.DeleteFunc(r.presses[p.Actor.ID], func(at time.Time) bool { return now.Sub(at) > time.Minute })
	if len(recent) >= pressesPerMinute {
		r.presses[p.Actor.ID] = recent
		return "Too many presses: at most " + strconv.Itoa(pressesPerMinute) + " a minute. Nothing was done; try again in a minute."
	}
	r.presses[p.Actor.ID] = append(recent, now)
	return ""
}

// logsPostedLately says why More logs does not answer incident id again
// so soon ("" when it may): its last reply is in the thread.
func (r *Receiver) logsPostedLately(id string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if at, ok := r.moreLogs[id]; ok && time.Since(at) < moreLogsEvery {
		return "More logs of this incident were posted in its thread " + strconv.Itoa(int(time.Since(at).Seconds())) + " s ago; ask again in a few minutes."
	}
	return ""
}

// logsPosted records that incident id's logs are in its thread now.
func (r *Receiver) logsPosted(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.moreLogs) > maxTracked {
		clear(r.moreLogs)
	}
	r.moreLogs[id] = time.Now()
}

// Paces of presses, and how many people and incidents they are kept for.
const (
	pressesPerMinute = 10
	moreLogsEvery    = 2 * time.Minute
	maxTracked       = 10000
)

// mayAnswerRefusal says whether user may be told of a refused press now:
// once a minute at most, so that pressing what one may not press costs
// herald one ephemeral message and one log line a minute.
func (r *Receiver) mayAnswerRefusal(user string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	if at, ok := r.refusals[user]; ok && now.Sub(at) < time.Minute {
		return false
	}
	if len(r.refusals) > maxTracked {
		clear(r.refusals)
	}
	r.refusals[user] = now
	return true
}
