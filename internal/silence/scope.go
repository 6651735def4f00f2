package silence

// warnScope says when a Silence's matchers ask for more than its
// namespace, which is all it mutes (it is logged at start for every
// Silence herald lists, and when one is created or changed):
//
//   - one in herald's own namespace that does not name that namespace
//     used to mute every namespace (before ClusterSilences). It now
//     mutes herald's namespace only, so what it was made for is no
//     longer muted: recreate it as a ClusterSilence.
//   - one whose namespace matcher misses its own namespace mutes
//     nothing at all.
func (m *Muter) warnScope(s Silence) {
	if s.Cluster {
		return
	}
	switch ns := s.Matchers.Namespace; {
	case s.Namespace == m.namespace && ns != m.namespace:
		m.logger.Warn("a Silence in herald's own namespace no longer mutes other namespaces: it mutes only incidents in "+s.Namespace+
			". To mute across namespaces, recreate it as a ClusterSilence (herald silence create --all-namespaces ..., with the "+
			"clustersilences permission) and delete it; to keep it for "+s.Namespace+" alone, set spec.matchers.namespace: "+s.Namespace,
			"silence", s.Namespace+"/"+s.Name, "matchers", s.Matchers.String(), "endsAt", s.EndsAt)
	case ns != "" && !glob(ns, s.Namespace):
		m.logger.Warn("a Silence mutes nothing: it mutes only incidents in its own namespace, and its namespace matcher excludes it; "+
			"to mute other namespaces, use a ClusterSilence",
			"silence", s.Namespace+"/"+s.Name, "matchers", s.Matchers.String())
	}
}
