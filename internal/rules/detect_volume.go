package rules

import (
	"fmt"
	"math"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/herald-k8s/herald/config"
)

// VolumeSample is one reading of a volume's filesystem by the kubelet of
// the node that mounts it (its stats summary).
type VolumeSample struct {
	// At is when the kubelet measured (its own time stamp).
	At                  time.Time
	Capacity, Available int64 // bytes
	Inodes, InodesFree  int64 // 0 when the filesystem does not say
}

// VolumeUsage is what herald has read of one claim's volume.
type VolumeUsage struct {
	// Samples, oldest first, one per kubelet measurement, within the
	// longest window a volume-filling rule asks for.
	Samples []VolumeSample
	// Node and Pod are where the last sample was read.
	Node, Pod string
}

// VolumeStats gives the volume-filling detector the kubelet's readings of
// PersistentVolumeClaims (internal/volumes polls them).
type VolumeStats interface {
	// Usage returns the samples of a claim; ok is false when none is
	// known (no pod mounts it, or none within the window).
	Usage(namespace, claim string) (u VolumeUsage, ok bool)
	// Measuring is true once every node has been read since this replica
	// began to lead: from then on a claim without samples is one no
	// kubelet measures, not one herald has not read yet.
	Measuring() bool
}

// Defaults of the volume-filling detector.
const (
	DefaultVolumeWarning  = 80
	DefaultVolumeCritical = 90
	DefaultVolumeWindow   = time.Hour
	DefaultVolumeHorizon  = 24 * time.Hour
)

// fitSamples is the fewest samples a forecast is made from; a forecast
// also needs samples spanning half its window, so that one burst of
// writes (an import, a compaction) is not taken for a trend.
const fitSamples = 3

// detectVolumeFilling fires while a claim's volume is fuller than the
// rule's threshold (VolumeFillingUp, the rule's severity) or its critical
// threshold (VolumeAlmostFull, critical), or when at the window's rate it
// will be full within the horizon (VolumeFillingUp, before the
// threshold). "Full" is no space left for the volume's users: what the
// filesystem keeps for root counts as used, as df's Avail says.
//
// While herald cannot tell — no reading since this replica began to lead,
// or too few samples for a forecast yet — an open incident stays open
// (Sustaining) and none opens: a restart or a failover neither resolves a
// full volume's alert nor says it again.
func detectVolumeFilling(obj runtime.Object, p Params, now time.Time) ([]Detection, error) {
	pvc, ok := obj.(*corev1.PersistentVolumeClaim)
	if !ok {
		return nil, fmt.Errorf("volume-filling detector got %T", obj)
	}
	if pvc.DeletionTimestamp != nil || p.volumes == nil {
		return nil, nil
	}
	u, ok := p.volumes.Usage(pvc.Namespace, pvc.Name)
	if !ok || len(u.Samples) == 0 || u.Samples[len(u.Samples)-1].Capacity <= 0 {
		if !p.volumes.Measuring() {
			const unread = "not measured yet since herald started leading"
			return []Detection{{Reason: "VolumeAlmostFull", Severity: "critical", Sustaining: true, Detail: unread},
				{Reason: "VolumeFillingUp", Sustaining: true, Detail: unread}}, nil
		}
		return nil, nil // no pod mounts it, or its kubelet says nothing of it
	}
	last := u.Samples[len(u.Samples)-1]
	bytesFull := percent(last.Capacity-last.Available, last.Capacity)
	inodesFull := 0.0
	if last.Inodes > 0 {
		inodesFull = percent(last.Inodes-last.InodesFree, last.Inodes)
	}
	fc := forecastFull(u.Samples, p.Window, now)
	facts := map[string]string{
		"percentFull": strconv.Itoa(int(math.Floor(bytesFull))),
		"available":   strconv.FormatInt(last.Available, 10),
		"capacity":    strconv.FormatInt(last.Capacity, 10),
		"threshold":   strconv.Itoa(p.Threshold),
		"critical":    strconv.Itoa(p.Critical),
	}
	if p.Horizon > 0 {
		facts["horizon"] = window(p.Horizon)
	}
	if u.Node != "" {
		facts["node"] = u.Node
	}
	if u.Pod != "" {
		facts["pod"] = u.Pod
	}
	var detail string
	fullest := bytesFull
	switch {
	case inodesFull > bytesFull && inodesFull >= float64(p.Threshold):
		fullest = inodesFull
		facts["inodesPercentFull"] = strconv.Itoa(int(math.Floor(inodesFull)))
		detail = fmt.Sprintf("the volume's inodes are %d%% used: %d more files can be made (its bytes are %d%% full)", int(math.Floor(inodesFull)), last.InodesFree, int(math.Floor(bytesFull)))
	case last.Available == 0:
		detail = fmt.Sprintf("the volume is full: nothing free of %s", bytesSaid(last.Capacity))
	default:
		detail = fmt.Sprintf("the volume is %d%% full: %s free of %s", int(math.Floor(bytesFull)), bytesSaid(last.Available), bytesSaid(last.Capacity))
		if fc.state == forecastFilling {
			facts["fullIn"] = strconv.FormatInt(int64(fc.fullIn/time.Second), 10)
			detail += fmt.Sprintf("; filling at %s/h over the last %s, it is full in %s (around %s)",
				bytesSaid(int64(fc.perHour)), window(p.Window), about(fc.fullIn), when(now.Add(fc.fullIn), now))
		}
	}
	if u.Pod != "" {
		detail += fmt.Sprintf("; mounted by pod %s on node %s", u.Pod, u.Node)
	}
	var out []Detection
	if fullest >= float64(p.Critical) {
		out = append(out, Detection{Reason: "VolumeAlmostFull", Severity: "critical", Facts: facts, Detail: detail})
	}
	switch {
	case fullest >= float64(p.Threshold) || (fc.state == forecastFilling && p.Horizon > 0 && fc.fullIn <= p.Horizon):
		out = append(out, Detection{Reason: "VolumeFillingUp", Facts: facts, Detail: detail})
	case fc.state == forecastUnknown && p.Horizon > 0:
		// Too few samples to say (herald began leading within half a
		// window): a forecast's incident stays open until they suffice.
		out = append(out, Detection{Reason: "VolumeFillingUp", Sustaining: true, Facts: facts, Detail: detail})
	}
	return out, nil
}

// forecastState says what the samples tell of the volume's future.
type forecastState int

const (
	forecastUnknown forecastState = iota // too few samples, or too close together
	forecastSteady                       // not filling (steady, emptying, or a trickle)
	forecastFilling                      // full in fullIn
)

type forecast struct {
	state   forecastState
	fullIn  time.Duration
	perHour float64 // bytes
}

// forecastFull fits a line, by least squares, to the free bytes of the
// samples within window before now, and says when it reaches zero.
func forecastFull(samples []VolumeSample, window time.Duration, now time.Time) forecast {
	from := now.Add(-window)
	var in []VolumeSample
	for _, s := range samples {
		if !s.At.Before(from) {
			in = append(in, s)
		}
	}
	if len(in) < fitSamples || in[len(in)-1].At.Sub(in[0].At) < window/2 {
		return forecast{state: forecastUnknown}
	}
	// Seconds from the first sample keep the sums small.
	t0 := in[0].At
	var sumT, sumA float64
	for _, s := range in {
		sumT += s.At.Sub(t0).Seconds()
		sumA += float64(s.Available)
	}
	n := float64(len(in))
	meanT, meanA := sumT/n, sumA/n
	var cov, varT float64
	for _, s := range in {
		dt := s.At.Sub(t0).Seconds() - meanT
		cov += dt * (float64(s.Available) - meanA)
		varT += dt * dt
	}
	if varT == 0 {
		return forecast{state: forecastUnknown}
	}
	slope := cov / varT // bytes per second; negative while filling
	if slope >= 0 {
		return forecast{state: forecastSteady}
	}
	last := in[len(in)-1]
	left := float64(last.Available)/-slope - now.Sub(last.At).Seconds()
	if left > float64(100*365*24*time.Hour/time.Second) {
		return forecast{state: forecastSteady} // a trickle: never, for an operator
	}
	return forecast{state: forecastFilling, fullIn: time.Duration(max(left, 0) * float64(time.Second)), perHour: -slope * 3600}
}

// when says a forecast's moment: its time of day in UTC, with the date
// when it is not within a day of now.
func when(t, now time.Time) string {
	t = t.UTC().Truncate(time.Minute)
	if t.Sub(now) < 24*time.Hour {
		return t.Format("15:04 UTC")
	}
	return t.Format("2006-01-02 15:04 UTC")
}

func percent(part, whole int64) float64 {
	if whole <= 0 {
		return 0
	}
	return float64(part) * 100 / float64(whole)
}

// bytesSaid is a size as df -h says it, in binary units.
func bytesSaid(n int64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatInt(n, 10) + " B"
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	v := float64(n) / float64(div)
	prefix := "KMGTPE"[exp : exp+1]
	if v >= 10 {
		return fmt.Sprintf("%.0f %siB", v, prefix)
	}
	return fmt.Sprintf("%.1f %siB", v, prefix)
}

// about says a forecast's duration as roughly as it is known.
func about(d time.Duration) string {
	switch {
	case d < 2*time.Minute:
		return "about a minute"
	case d < time.Hour:
		return fmt.Sprintf("about %d min", int(d.Round(time.Minute)/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("about %d h", int(d.Round(time.Hour)/time.Hour))
	default:
		return fmt.Sprintf("about %d days", int(d.Round(24*time.Hour)/(24*time.Hour)))
	}
}

// checkVolumeParams refuses thresholds that cannot be met or would fire
// on every volume, at the rule's lines.
func checkVolumeParams(cfg *config.Config, p string, params Params) config.Errors {
	var errs config.Errors
	if params.Threshold < 1 || params.Threshold > 100 {
		errs = append(errs, cfg.ErrorAt(p+".threshold", "threshold is the percentage full at which volume-filling alerts: give 1 to 100 (default %d), not %d", DefaultVolumeWarning, params.Threshold))
	}
	if len(errs) == 0 && (params.Critical < params.Threshold || params.Critical > 100) {
		errs = append(errs, cfg.ErrorAt(p+".critical", "critical is the percentage full at which volume-filling alerts as critical: give the threshold (%d) to 100, not %d", params.Threshold, params.Critical))
	}
	if params.Window < 10*time.Second {
		errs = append(errs, cfg.ErrorAt(p+".window", "window is how far back volume-filling fits its forecast: give 10s or more (default 1h), not %s", params.Window))
	}
	return errs
}
