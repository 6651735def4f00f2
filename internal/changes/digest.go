package changes

import (
	"hash/maphash"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// digest is what the change record keeps of a pod template: enough to say
// what changed at the next rollout, and which ConfigMaps and Secrets the
// pods read, but no value. Values (env, args, command, probes, volume
// sources) are kept only as hashes under a seed chosen per process and
// never printed: they can tell "changed" from "same" and nothing else.
//
// Whoever edits a workload chooses how many containers, env vars, volumes
// and references its template has, and how long their names are: the
// digest keeps the first few of each (by name) and a hash of the rest, so
// a template of any size costs the record the same bounded memory, and a
// change beyond the first few is still said, just not by name.
type digest struct {
	hash        uint64 // the whole template
	containers  []ctrDigest
	volumes     []named // volume name, hash of its source
	refs        []Ref   // ConfigMaps and Secrets read, sorted, unique
	restartedAt string  // kubectl rollout restart's template annotation
	// moreContainers and moreVolumes hash what lies beyond the kept ones
	// (0: nothing); moreRefs counts the references not kept.
	moreContainers, moreVolumes uint64
	moreRefs                    int
}

// Bounds of a digest (see digest).
const (
	maxDigestContainers = 16
	maxDigestEnv        = 64
	maxDigestVolumes    = 32
	maxDigestRefs       = 32
	maxDigestQuantities = 8
	// maxDigestName bounds every name and image a digest keeps; a hash
	// of the whole still tells a change.
	maxDigestName = 253
)

type ctrDigest struct {
	name     string
	init     bool
	image    string
	imageSum uint64  // of the whole image reference (image may be clipped)
	env      []named // by name, sorted, the first maxDigestEnv
	moreEnv  uint64  // hash of the env vars beyond those (0: none)
	command  uint64
	args     uint64
	requests []quantity // sorted by resource name, the first maxDigestQuantities
	limits   []quantity
	// moreRequests and moreLimits hash those beyond (0: none).
	moreRequests, moreLimits uint64
	probes                   [3]uint64 // liveness, readiness, startup; 0: none
}

type named struct {
	name string
	hash uint64
}

type quantity struct{ name, value string }

// Ref names a ConfigMap or Secret a pod template reads (volumes, envFrom,
// env valueFrom, projected volumes), in the workload's namespace.
type Ref struct {
	Kind string // "ConfigMap" or "Secret"
	Name string
}

func (r Ref) String() string { return r.Kind + " " + r.Name }

// ref names a referenced object, its name bounded (a valid one is at most
// 253 bytes and left as it is; the API server does not check every
// reference).
func ref(kind, name string) Ref { return Ref{kind, clipTo(name, maxDigestName)} }

// restartedAtAnnotation is what `kubectl rollout restart` sets in the pod
// template to roll pods without another change.
const restartedAtAnnotation = "kubectl.kubernetes.io/restartedAt"

// hasher hashes template parts under one seed; it is cheap to copy.
type hasher struct{ seed maphash.Seed }

func (h hasher) str(parts ...string) uint64 {
	var m maphash.Hash
	m.SetSeed(h.seed)
	for _, p := range parts {
		m.WriteString(p)
		m.WriteByte(0)
	}
	return m.Sum64()
}

// bytes hashes a marshalled part; a part that does not marshal hashes as
// its Go representation's absence, which is rare enough (never, for
// decoded objects) to accept.
func (h hasher) bytes(b []byte) uint64 { return maphash.Bytes(h.seed, b) }

// marshaler is what the API types' generated protobuf code provides.
type marshaler interface{ Marshal() ([]byte, error) }

func (h hasher) of(m marshaler) uint64 {
	b, _ := m.Marshal()
	return h.bytes(b) | 1 // never 0, which means "none"
}

// digestOf reduces a pod template to its digest.
func (h hasher) digestOf(t *corev1.PodTemplateSpec) digest {
	d := digest{hash: h.of(t), restartedAt: clip(t.Annotations[restartedAtAnnotation])}
	refs := map[Ref]struct{}{}
	var rest []uint64
	for i := range t.Spec.InitContainers {
		c := h.container(&t.Spec.InitContainers[i], true, refs)
		if len(d.containers) < maxDigestContainers {
			d.containers = append(d.containers, c)
		} else {
			rest = append(rest, h.of(&t.Spec.InitContainers[i]))
		}
	}
	for i := range t.Spec.Containers {
		c := h.container(&t.Spec.Containers[i], false, refs)
		if len(d.containers) < maxDigestContainers {
			d.containers = append(d.containers, c)
		} else {
			rest = append(rest, h.of(&t.Spec.Containers[i]))
		}
	}
	d.moreContainers = h.sums(rest)
	for i := range t.Spec.Volumes {
		v := &t.Spec.Volumes[i]
		d.volumes = append(d.volumes, named{clipTo(v.Name, maxDigestName), h.str(v.Name) ^ h.of(&v.VolumeSource)})
		volumeRefs(&v.VolumeSource, refs)
	}
	d.volumes, d.moreVolumes = h.bounded(d.volumes, maxDigestVolumes)
	for r := range refs {
		d.refs = append(d.refs, r)
	}
	slices.SortFunc(d.refs, compareRefs)
	if len(d.refs) > maxDigestRefs {
		d.moreRefs = len(d.refs) - maxDigestRefs
		d.refs = slices.Clip(d.refs[:maxDigestRefs])
	}
	return d
}

// bounded sorts named parts by name and keeps the first n, with a hash of
// the rest (0: none).
func (h hasher) bounded(parts []named, n int) ([]named, uint64) {
	slices.SortFunc(parts, func(a, b named) int { return strings.Compare(a.name, b.name) })
	if len(parts) <= n {
		return parts, 0
	}
	rest := make([]uint64, 0, len(parts)-n)
	for _, p := range parts[n:] {
		rest = append(rest, p.hash)
	}
	return slices.Clip(parts[:n]), h.sums(rest)
}

// sums hashes hashes, in order (0 for none).
func (h hasher) sums(parts []uint64) uint64 {
	if len(parts) == 0 {
		return 0
	}
	var m maphash.Hash
	m.SetSeed(h.seed)
	for _, p := range parts {
		for i := range 8 {
			m.WriteByte(byte(p >> (8 * i)))
		}
	}
	return m.Sum64() | 1
}

func compareRefs(a, b Ref) int {
	if c := strings.Compare(a.Kind, b.Kind); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}

func (h hasher) container(c *corev1.Container, init bool, refs map[Ref]struct{}) ctrDigest {
	d := ctrDigest{name: clipTo(c.Name, maxDigestName), init: init, image: clipTo(c.Image, maxDigestName), imageSum: h.str(c.Image),
		command: h.str(c.Command...), args: h.str(c.Args...)}
	for i := range c.Env {
		e := &c.Env[i]
		v := h.str(e.Value)
		if e.ValueFrom != nil {
			v = h.of(e.ValueFrom)
			if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
				refs[ref("ConfigMap", r.Name)] = struct{}{}
			}
			if r := e.ValueFrom.SecretKeyRef; r != nil {
				refs[ref("Secret", r.Name)] = struct{}{}
			}
		}
		d.env = append(d.env, named{clipTo(e.Name, maxDigestName), h.str(e.Name) ^ v})
	}
	d.env, d.moreEnv = h.bounded(d.env, maxDigestEnv)
	for _, f := range c.EnvFrom {
		if f.ConfigMapRef != nil {
			refs[ref("ConfigMap", f.ConfigMapRef.Name)] = struct{}{}
		}
		if f.SecretRef != nil {
			refs[ref("Secret", f.SecretRef.Name)] = struct{}{}
		}
	}
	d.requests, d.moreRequests = h.quantities(c.Resources.Requests)
	d.limits, d.moreLimits = h.quantities(c.Resources.Limits)
	for i, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
		if p != nil {
			d.probes[i] = h.of(p)
		}
	}
	return d
}

// quantities lists a container's requests or limits by name, the first
// maxDigestQuantities of them (extended resources are anyone's to name),
// with a hash of the rest (0: none).
func (h hasher) quantities(l corev1.ResourceList) ([]quantity, uint64) {
	if len(l) == 0 {
		return nil, 0
	}
	out := make([]quantity, 0, len(l))
	for name, q := range l {
		out = append(out, quantity{clipTo(string(name), maxDigestName), q.String()})
	}
	slices.SortFunc(out, func(a, b quantity) int { return strings.Compare(a.name, b.name) })
	if len(out) <= maxDigestQuantities {
		return out, 0
	}
	rest := make([]uint64, 0, len(out)-maxDigestQuantities)
	for _, q := range out[maxDigestQuantities:] {
		rest = append(rest, h.str(q.name, q.value))
	}
	return slices.Clip(out[:maxDigestQuantities]), h.sums(rest)
}

// volumeRefs adds the ConfigMaps and Secrets a volume reads.
func volumeRefs(v *corev1.VolumeSource, refs map[Ref]struct{}) {
	if v.ConfigMap != nil {
		refs[ref("ConfigMap", v.ConfigMap.Name)] = struct{}{}
	}
	if v.Secret != nil {
		refs[ref("Secret", v.Secret.SecretName)] = struct{}{}
	}
	if v.Projected != nil {
		for _, s := range v.Projected.Sources {
			if s.ConfigMap != nil {
				refs[ref("ConfigMap", s.ConfigMap.Name)] = struct{}{}
			}
			if s.Secret != nil {
				refs[ref("Secret", s.Secret.Name)] = struct{}{}
			}
		}
	}
}
