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
	// known (not mounted, not polled yet, or too old to trust).
	Usage(namespace, claim string) (u VolumeUsage, ok bool)
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
func detectVolumeFilling(obj runtime.Object, p Params, now time.Time) ([]Detection, error) {
	pvc, ok := obj.(*corev1.PersistentVolumeClaim)
	if !ok {
		return nil, fmt.Errorf("volume-filling detector got %T", obj)
	}
	if pvc.DeletionTimestamp != nil || p.volumes == nil {
		return nil, nil
	}
	u, ok := p.volumes.Usage(pvc.Namespace, pvc.Name)
	if !ok || len(u.Samples) == 0 {
		return nil, nil
	}
	last := u.Samples[len(u.Samples)-1]
	if last.Capacity <= 0 {
		return nil, nil
	}
	bytesFull := percent(last.Capacity-last.Available, last.Capacity)
	inodesFull := 0.0
	if last.Inodes > 0 {
		inodesFull = percent(last.Inodes-last.InodesFree, last.Inodes)
	}
	fullIn, forecast := forecastFull(u.Samples, p.Window, now)
	facts := map[string]string{
		"percentFull": strconv.Itoa(int(math.Floor(bytesFull))),
		"available":   strconv.FormatInt(last.Available, 10),
		"capacity":    strconv.FormatInt(last.Capacity, 10),
	}
	if u.Node != "" {
		facts["node"] = u.Node
	}
	if u.Pod != "" {
		facts["pod"] = u.Pod
	}
	detail := fmt.Sprintf("the volume is %d%% full: %s free of %s", int(math.Floor(bytesFull)), bytesSaid(last.Available), bytesSaid(last.Capacity))
	fullest := bytesFull
	if inodesFull > bytesFull && inodesFull >= float64(p.Threshold) {
		fullest = inodesFull
		facts["inodesPercentFull"] = strconv.Itoa(int(math.Floor(inodesFull)))
		detail = fmt.Sprintf("the volume's inodes are %d%% used: %d files more can be made (its bytes are %d%% full)", int(math.Floor(inodesFull)), last.InodesFree, int(math.Floor(bytesFull)))
	}
	if forecast {
		facts["fullIn"] = strconv.FormatInt(int64(fullIn/time.Second), 10)
		detail += fmt.Sprintf("; at the rate of the last %s it is full in %s", window(p.Window), about(fullIn))
	}
	if u.Pod != "" {
		detail += fmt.Sprintf("; mounted by pod %s on node %s", u.Pod, u.Node)
	}
	var out []Detection
	if fullest >= float64(p.Critical) {
		out = append(out, Detection{Reason: "VolumeAlmostFull", Severity: "critical", Facts: facts, Detail: detail})
	}
	if fullest >= float64(p.Threshold) || (forecast && p.Horizon > 0 && fullIn <= p.Horizon) {
		out = append(out, Detection{Reason: "VolumeFillingUp", Facts: facts, Detail: detail})
	}
	return out, nil
}

// forecastFull fits a line, by least squares, to the free bytes of the
// samples within window before now, and says when it reaches zero. ok is
// false when the samples are too few or too close together, or the
// volume is not filling.
func forecastFull(samples []VolumeSample, window time.Duration, now time.Time) (time.Duration, bool) {
	from := now.Add(-window)
	var in []VolumeSample
	for _, s := range samples {
		if !s.At.Before(from) {
			in = append(in, s)
		}
	}
	if len(in) < fitSamples || in[len(in)-1].At.Sub(in[0].At) < window/2 {
		return 0, false
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
		return 0, false
	}
	slope := cov / varT // bytes per second; negative while filling
	if slope >= 0 {
		return 0, false
	}
	last := in[len(in)-1]
	left := float64(last.Available)/-slope - now.Sub(last.At).Seconds()
	if left > float64(100*365*24*time.Hour/time.Second) {
		return 0, false // a trickle: never, for an operator
	}
	return time.Duration(max(left, 0) * float64(time.Second)), true
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
