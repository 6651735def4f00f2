package changes

import (
	"hash/maphash"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Diff summarizes what changed from one pod template to the next. Like
// everything in this package it names env vars, resources, volumes and
// references but never quotes a value (Summary).
func Diff(old, new *corev1.PodTemplateSpec) Summary {
	h := hasher{seed: maphash.MakeSeed()}
	a, b := h.digestOf(old), h.digestOf(new)
	return diff(&a, &b)
}

// diff compares two digests made under the same seed.
func diff(a, b *digest) Summary {
	var s Summary
	if a.hash == b.hash {
		return s
	}
	// Containers: name a container only when the pod has several, as
	// "image app: …" reads better than nothing when it has one.
	several := apps(a.containers) > 1 || apps(b.containers) > 1
	label := func(c *ctrDigest) string {
		if c.init || several {
			return c.name
		}
		return ""
	}
	for i := range b.containers {
		nc := &b.containers[i]
		oc := findCtr(a.containers, nc.name, nc.init)
		if oc == nil {
			s.add(CatContainer, nc.name, kindOf(nc)+" "+clip(nc.name)+" added (image "+clip(nc.image)+")")
			continue
		}
		diffContainer(&s, oc, nc, label(nc))
	}
	for i := range a.containers {
		oc := &a.containers[i]
		if findCtr(b.containers, oc.name, oc.init) == nil {
			s.add(CatContainer, oc.name, kindOf(oc)+" "+clip(oc.name)+" removed")
		}
	}
	if a.moreContainers != b.moreContainers {
		s.add(CatContainer, "", "containers beyond the first "+strconv.Itoa(maxDigestContainers)+" changed")
	}
	diffVolumes(&s, a.volumes, b.volumes)
	if a.moreVolumes != b.moreVolumes {
		s.add(CatVolume, "", "volumes beyond the first "+strconv.Itoa(maxDigestVolumes)+" changed")
	}
	diffRefs(&s, a.refs, b.refs)
	if b.restartedAt != a.restartedAt && b.restartedAt != "" {
		s.add(CatRestart, "", "restarted (kubectl rollout restart)")
	}
	if s.Empty() {
		s.add(CatOther, "", "pod template changed (labels, annotations or other fields)")
	}
	return s
}

// apps counts the containers that are not init containers.
func apps(cs []ctrDigest) int {
	n := 0
	for i := range cs {
		if !cs[i].init {
			n++
		}
	}
	return n
}

func kindOf(c *ctrDigest) string {
	if c.init {
		return "init container"
	}
	return "container"
}

func findCtr(cs []ctrDigest, name string, init bool) *ctrDigest {
	for i := range cs {
		if cs[i].name == name && cs[i].init == init {
			return &cs[i]
		}
	}
	return nil
}

// in prefixes a text with its container's label: "env app: X changed".
func in(what, label string) string {
	if label == "" {
		return what + " "
	}
	return what + " " + clip(label) + ": "
}

// verb says what happened to a part of a container: "args changed (app)".
func verb(what, happened, label string) string {
	if label == "" {
		return what + " " + happened
	}
	return what + " " + happened + " (" + clip(label) + ")"
}

func diffContainer(s *Summary, o, n *ctrDigest, label string) {
	name := n.name
	if o.imageSum != n.imageSum {
		s.add(CatImage, name, in("image", label)+imageChange(o.image, n.image))
	}
	env := diffNamed(o.env, n.env)
	if o.moreEnv != n.moreEnv {
		env = strings.TrimPrefix(env+", others beyond the first "+strconv.Itoa(maxDigestEnv)+" changed", ", ")
	}
	if env != "" {
		s.add(CatEnv, name, in("env", label)+env)
	}
	switch {
	case o.command != n.command && o.args != n.args:
		s.add(CatArgs, name, verb("command and args", "changed", label))
	case o.command != n.command:
		s.add(CatArgs, name, verb("command", "changed", label))
	case o.args != n.args:
		s.add(CatArgs, name, verb("args", "changed", label))
	}
	for _, q := range []struct {
		what             string
		old, new         []quantity
		oldMore, newMore uint64
	}{{"requests", o.requests, n.requests, o.moreRequests, n.moreRequests}, {"limits", o.limits, n.limits, o.moreLimits, n.moreLimits}} {
		r := diffQuantities(q.old, q.new)
		if q.oldMore != q.newMore {
			r = strings.TrimPrefix(r+", others beyond the first "+strconv.Itoa(maxDigestQuantities)+" changed", ", ")
		}
		if r != "" {
			s.add(CatResources, name, in(q.what, label)+r)
		}
	}
	for i, probe := range []string{"liveness", "readiness", "startup"} {
		op, np := o.probes[i], n.probes[i]
		switch {
		case op == np:
		case op == 0:
			s.add(CatProbe, name, verb(probe+" probe", "added", label))
		case np == 0:
			s.add(CatProbe, name, verb(probe+" probe", "removed", label))
		default:
			s.add(CatProbe, name, verb(probe+" probe", "changed", label))
		}
	}
}

// diffNamed lists names added, removed and changed ("DB_POOL changed,
// NEW_FLAG added"); both lists are sorted by name.
func diffNamed(o, n []named) string {
	var out []string
	i, j := 0, 0
	for i < len(o) || j < len(n) {
		switch {
		case j >= len(n) || (i < len(o) && o[i].name < n[j].name):
			out = append(out, clip(o[i].name)+" removed")
			i++
		case i >= len(o) || n[j].name < o[i].name:
			out = append(out, clip(n[j].name)+" added")
			j++
		default:
			if o[i].hash != n[j].hash {
				out = append(out, clip(o[i].name)+" changed")
			}
			i++
			j++
		}
	}
	return joinBounded(out)
}

// maxNames bounds the names one item lists.
const maxNames = 6

func joinBounded(names []string) string {
	if len(names) > maxNames {
		more := len(names) - maxNames
		names = append(names[:maxNames:maxNames], "and "+strconv.Itoa(more)+" more")
	}
	return strings.Join(names, ", ")
}

// diffQuantities: "memory 256Mi → 512Mi, cpu added (500m)"; quantities are
// no secret.
func diffQuantities(o, n []quantity) string {
	var out []string
	i, j := 0, 0
	for i < len(o) || j < len(n) {
		switch {
		case j >= len(n) || (i < len(o) && o[i].name < n[j].name):
			out = append(out, clip(o[i].name)+" "+o[i].value+" → none")
			i++
		case i >= len(o) || n[j].name < o[i].name:
			out = append(out, clip(n[j].name)+" none → "+n[j].value)
			j++
		default:
			if o[i].value != n[j].value {
				out = append(out, clip(o[i].name)+" "+o[i].value+" → "+n[j].value)
			}
			i++
			j++
		}
	}
	return joinBounded(out)
}

func diffVolumes(s *Summary, o, n []named) {
	i, j := 0, 0
	for i < len(o) || j < len(n) {
		switch {
		case j >= len(n) || (i < len(o) && o[i].name < n[j].name):
			s.add(CatVolume, "", "volume "+clip(o[i].name)+" removed")
			i++
		case i >= len(o) || n[j].name < o[i].name:
			s.add(CatVolume, "", "volume "+clip(n[j].name)+" added")
			j++
		default:
			if o[i].hash != n[j].hash {
				s.add(CatVolume, "", "volume "+clip(o[i].name)+" changed")
			}
			i++
			j++
		}
	}
}

func diffRefs(s *Summary, o, n []Ref) {
	i, j := 0, 0
	for i < len(o) || j < len(n) {
		switch {
		case j >= len(n) || (i < len(o) && compareRefs(o[i], n[j]) < 0):
			s.add(CatRef, "", o[i].Kind+" "+clip(o[i].Name)+" no longer referenced")
			i++
		case i >= len(o) || compareRefs(n[j], o[i]) < 0:
			s.add(CatRef, "", n[j].Kind+" "+clip(n[j].Name)+" referenced")
			j++
		default:
			i++
			j++
		}
	}
}
