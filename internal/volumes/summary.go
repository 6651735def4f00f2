package volumes

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/herald-k8s/herald/internal/rules"
)

// maxSummaryBytes bounds one node's stats summary. A node of 110 pods
// says about 300 KB; a body larger than this is refused, not read (the
// decoder holds what it reads: four at once stay under 40 MiB).
const maxSummaryBytes = 8 << 20

// maxSkew is how far ahead of herald's clock a kubelet's time stamp may
// be; one further is taken as the time herald read it, so that a node's
// wrong clock cannot hold back the readings after it.
const maxSkew = time.Minute

// summary is the part of the kubelet's stats summary (GET
// /stats/summary, kubelet API stats/v1alpha1) herald reads: each pod's
// volumes that come from a PersistentVolumeClaim. Everything else in it
// (CPU, memory, network, containers) is skipped by the decoder.
type summary struct {
	Pods []struct {
		PodRef struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"podRef"`
		Volumes []struct {
			Time           time.Time `json:"time"`
			AvailableBytes *int64    `json:"availableBytes"`
			CapacityBytes  *int64    `json:"capacityBytes"`
			Inodes         *int64    `json:"inodes"`
			InodesFree     *int64    `json:"inodesFree"`
			PVCRef         *struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"pvcRef"`
		} `json:"volume"`
	} `json:"pods"`
}

// reading is one claim's sample in one node's summary.
type reading struct {
	claim  claimKey
	pod    string
	sample rules.VolumeSample
}

// parseSummary reads the claims' volumes of a stats summary. A volume
// without capacity or free bytes (the kubelet has not measured it yet) is
// left out; so is a claim of another namespace than its pod's, which no
// kubelet reports.
func parseSummary(r io.Reader, polled time.Time) ([]reading, error) {
	var s summary
	dec := json.NewDecoder(io.LimitReader(r, maxSummaryBytes+1))
	if err := dec.Decode(&s); err != nil {
		if err == io.ErrUnexpectedEOF {
			return nil, fmt.Errorf("the stats summary is cut short or larger than %d MiB", maxSummaryBytes>>20)
		}
		return nil, fmt.Errorf("the stats summary: %w", err)
	}
	var out []reading
	for _, p := range s.Pods {
		for _, v := range p.Volumes {
			if v.PVCRef == nil || v.CapacityBytes == nil || v.AvailableBytes == nil || *v.CapacityBytes <= 0 ||
				v.PVCRef.Namespace != p.PodRef.Namespace || v.PVCRef.Name == "" {
				continue
			}
			at := v.Time
			if at.IsZero() || at.After(polled.Add(maxSkew)) {
				at = polled
			}
			s := rules.VolumeSample{At: at, Capacity: *v.CapacityBytes, Available: min(max(*v.AvailableBytes, 0), *v.CapacityBytes)}
			if v.Inodes != nil && v.InodesFree != nil && *v.Inodes > 0 {
				s.Inodes, s.InodesFree = *v.Inodes, min(max(*v.InodesFree, 0), *v.Inodes)
			}
			out = append(out, reading{claim: claimKey{p.PodRef.Namespace, v.PVCRef.Name}, pod: p.PodRef.Name, sample: s})
		}
	}
	return out, nil
}
