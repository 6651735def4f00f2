package rules

import (
	"strings"
	"testing"
	"time"

	"github.com/herald-k8s/herald/config"
)

// readings is a kubelet's readings of one claim, shop/pgdata; unread:
// herald has not read every node yet.
type readings struct {
	u      VolumeUsage
	unread bool
}

func (r readings) Measuring() bool { return !r.unread }

func (r readings) Usage(namespace, claim string) (VolumeUsage, bool) {
	if namespace != "shop" || claim != "pgdata" || len(r.u.Samples) == 0 {
		return VolumeUsage{}, false
	}
	return r.u, true
}

const gib = int64(1) << 30

// filling makes n samples a minute apart, the last at now, of a 20 GiB
// volume with free bytes falling by perMinute from the last's free
// (perMinute 0: steady).
func filling(n int, free, perMinute int64) readings {
	u := VolumeUsage{Node: "node-3", Pod: "postgres-0"}
	for i := range n {
		ago := int64(n - 1 - i)
		u.Samples = append(u.Samples, VolumeSample{At: now.Add(-time.Duration(ago) * time.Minute), Capacity: 20 * gib, Available: free + ago*perMinute,
			Inodes: 1_310_720, InodesFree: 1_300_000})
	}
	return readings{u: u}
}

// TestVolumeFilling: a claim above its threshold fires VolumeFillingUp at
// the rule's severity; above the critical one, VolumeAlmostFull
// (critical) too; one that at the last window's rate is full within the
// horizon fires VolumeFillingUp before the threshold; a steady or
// emptying volume, too few samples or samples too close together, a
// claim herald has no readings of, and a claim being deleted do not.
func TestVolumeFilling(t *testing.T) {
	const rule = "rules:\n  - {name: disk, kind: PersistentVolumeClaim, detector: volume-filling, sinks: [out]%s}\nsinks: [{name: out, stdout: {}}]\n"
	twoHours := 10 * gib / 120 // a minute's share of 10 GiB in 2 h
	for _, tt := range []struct {
		name, extra, file string
		r                 readings
		want              string // "Reason/severity" joined by ","
		words             string // the detail must hold them
	}{
		{"steady half full", "", "pvc-bound.yaml", filling(60, 10*gib, 0), "", ""},
		{"steady above the threshold", "", "pvc-bound.yaml", filling(60, 3*gib, 0), "VolumeFillingUp/warning", "the volume is 85% full: 3.0 GiB free of 20 GiB; mounted by pod postgres-0 on node node-3"},
		{"above critical", "", "pvc-bound.yaml", filling(60, 1*gib, 0), "VolumeAlmostFull/critical,VolumeFillingUp/warning", "95% full: 1.0 GiB free"},
		{"a threshold of the rule's", ", threshold: 50, critical: 60", "pvc-bound.yaml", filling(60, 9*gib, 0), "VolumeFillingUp/warning", "55% full"},
		{"filling, full within the horizon", "", "pvc-bound.yaml", filling(60, 10*gib, twoHours), "VolumeFillingUp/warning", "the volume is 50% full: 10 GiB free of 20 GiB; filling at 5.0 GiB/h over the last 1 h, it is full in about 2 h (around 02:10 UTC)"},
		{"full", "", "pvc-bound.yaml", filling(60, 0, 0), "VolumeAlmostFull/critical,VolumeFillingUp/warning", "the volume is full: nothing free of 20 GiB; mounted"},
		{"filling, beyond the horizon", ", horizon: 1h", "pvc-bound.yaml", filling(60, 10*gib, twoHours), "", ""},
		{"forecast alerts off", ", horizon: 0s", "pvc-bound.yaml", filling(60, 10*gib, twoHours), "", ""},
		{"emptying", "", "pvc-bound.yaml", filling(60, 10*gib, -twoHours/4), "", ""},
		// Too few samples to tell (herald began leading within half a
		// window): a forecast's open incident stays open, none opens.
		{"too few samples", "", "pvc-bound.yaml", filling(2, 10*gib, twoHours), "~VolumeFillingUp/warning", ""},
		{"samples too close together", "", "pvc-bound.yaml", filling(20, 10*gib, twoHours), "~VolumeFillingUp/warning", ""},
		{"too few samples, no forecast alerts", ", horizon: 0s", "pvc-bound.yaml", filling(2, 10*gib, twoHours), "", ""},
		// Nothing read since herald began leading: both kept, none opened.
		{"not read yet", "", "pvc-bound.yaml", readings{unread: true}, "~VolumeAlmostFull/critical,~VolumeFillingUp/warning", ""},
		// Every node read, none measures it: no pod mounts it.
		{"no readings", "", "pvc-bound.yaml", readings{}, "", ""},
		{"a claim of no mounted volume", "", "pvc-pending.yaml", filling(60, 1*gib, 0), "", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			set := compileVolumeRule(t, rule, tt.extra)
			set.UseVolumes(tt.r)
			got, errs := set.Evaluate("PersistentVolumeClaim", loadObject(t, tt.file), now, nil)
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			var said []string
			for _, f := range got {
				mark := ""
				if f.Sustaining {
					mark = "~"
				}
				said = append(said, mark+f.Reason+"/"+f.Severity)
				if !strings.Contains(f.Text, tt.words) {
					t.Errorf("%s says %q, want %q in it", f.Reason, f.Text, tt.words)
				}
			}
			if s := strings.Join(said, ","); s != tt.want {
				t.Errorf("got %q, want %q", s, tt.want)
			}
		})
	}
}

func compileVolumeRule(t *testing.T, rule, extra string) *Set {
	t.Helper()
	return compile(t, strings.Replace(rule, "%s", extra, 1))
}

// TestVolumeForecast: the least-squares fit's time to full, from samples
// that wobble around a line, within a minute of the line's; the time
// since the last sample counts.
func TestVolumeForecast(t *testing.T) {
	var samples []VolumeSample
	perMinute := gib / 10 // 10 GiB → 100 min from the last sample
	for i := range 61 {
		ago := int64(60 - i)
		wobble := int64((i%3)-1) * (perMinute / 2)
		samples = append(samples, VolumeSample{At: now.Add(-time.Duration(ago) * time.Minute), Capacity: 20 * gib, Available: 10*gib + ago*perMinute + wobble})
	}
	got := forecastFull(samples, time.Hour, now.Add(10*time.Minute))
	if got.state != forecastFilling || got.fullIn < 89*time.Minute || got.fullIn > 91*time.Minute || got.perHour < 5.9*float64(gib) || got.perHour > 6.1*float64(gib) {
		t.Errorf("full in %s at %.1f GiB/h (%v), want 90 min (100 from the last sample, 10 of them gone) at 6 GiB/h", got.fullIn, got.perHour/float64(gib), got.state)
	}
	if got := forecastFull(samples, time.Hour, now.Add(2*time.Hour)); got.state != forecastUnknown {
		t.Error("a forecast from samples all older than its window")
	}
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{{40 * time.Second, "about a minute"}, {40 * time.Minute, "about 40 min"}, {5*time.Hour + 20*time.Minute, "about 5 h"}, {80 * time.Hour, "about 3 days"}} {
		if got := about(tt.d); got != tt.want {
			t.Errorf("about(%s) = %q, want %q", tt.d, got, tt.want)
		}
	}
	for _, tt := range []struct {
		n    int64
		want string
	}{{512, "512 B"}, {1536, "1.5 KiB"}, {3 * gib, "3.0 GiB"}, {20 * gib, "20 GiB"}, {300 << 20, "300 MiB"}} {
		if got := bytesSaid(tt.n); got != tt.want {
			t.Errorf("bytesSaid(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}

// TestVolumeInodes: a volume out of inodes is full though its bytes are
// not.
func TestVolumeInodes(t *testing.T) {
	r := filling(60, 18*gib, 0)
	for i := range r.u.Samples {
		r.u.Samples[i].InodesFree = 30_000
	}
	set := compile(t, "rules:\n  - {name: disk, kind: PersistentVolumeClaim, detector: volume-filling, sinks: [out]}\nsinks: [{name: out, stdout: {}}]\n")
	set.UseVolumes(r)
	got, _ := set.Evaluate("PersistentVolumeClaim", loadObject(t, "pvc-bound.yaml"), now, nil)
	if len(got) != 2 || got[0].Reason != "VolumeAlmostFull" || !strings.Contains(got[0].Text, "inodes are 97% used: 30000 more files can be made") {
		t.Errorf("got %+v", got)
	}
}

// TestVolumeParams: thresholds that cannot be met, or a window too short
// to fit, are refused at their line.
func TestVolumeParams(t *testing.T) {
	for _, tt := range []struct{ extra, want string }{
		{"threshold: 120", "test.yaml:2:98: rules[0].threshold: threshold is the percentage full at which volume-filling alerts: give 1 to 100 (default 80), not 120"},
		{"threshold: 85, critical: 70", "critical is the percentage full at which volume-filling alerts as critical: give the threshold (85) to 100, not 70"},
		{"critical: 101", "not 101"},
		{"window: 5s", "give 10s or more"},
	} {
		_, err := compileErr("rules:\n  - {name: disk, kind: PersistentVolumeClaim, detector: volume-filling, sinks: [out], " + tt.extra + "}\nsinks: [{name: out, stdout: {}}]\n")
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.extra, err, tt.want)
		}
	}
	set := compile(t, "rules:\n  - {name: disk, kind: PersistentVolumeClaim, detector: volume-filling, sinks: [out], threshold: 95}\nsinks: [{name: out, stdout: {}}]\n")
	if w := set.VolumeWindow(); w != time.Hour {
		t.Errorf("window %s, want the default 1h", w)
	}
	if k := strings.Join(set.Kinds(), ","); !strings.Contains(k, "Node") {
		t.Errorf("kinds %s: nodes must be watched to be polled", k)
	}
}

func compileErr(yamlText string) (*Set, error) {
	cfg, err := config.Parse("test.yaml", []byte(yamlText))
	if err != nil {
		return nil, err
	}
	return Compile(cfg)
}
