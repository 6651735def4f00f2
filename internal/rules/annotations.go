package rules

import (
	"regexp"
	"slices"
	"strings"
)

// Which annotations the rules read. Annotations are the one part of an
// object anyone who can edit it can make as large as the API allows (256
// KB of metadata.annotations, as much again in a pod template), and the
// detectors never read them. So the watcher caches an object's
// annotations only when a rule reads them, and then only the ones it
// names (docs/rules.md, "What herald caches"). A rule's CEL condition or
// message template names an annotation as
//
//	object.metadata.annotations["team.io/owner"]      (CEL, also '…')
//	object.metadata.annotations.owner                (CEL field, has())
//	"team.io/owner" in object.metadata.annotations    (CEL)
//	index .Object.metadata.annotations "team.io/owner" (template)
//	.Object.metadata.annotations.owner               (template)
//
// Anything else that could reach the annotations — the word annotations
// used another way (iterated, passed to a function, printed whole), or
// the whole metadata or object read at once (".Object" printed, "object"
// passed to a function) — keeps every annotation of that kind: when in
// doubt, herald keeps them.

var (
	annIndex      = regexp.MustCompile(`annotations\s*\[\s*(?:"([^"\\]*)"|'([^'\\]*)')\s*\]`)
	annField      = regexp.MustCompile(`annotations\.([A-Za-z_][A-Za-z0-9_]*)\b\s*(\(?)`)
	annIn         = regexp.MustCompile(`(?:"([^"\\]*)"|'([^'\\]*)')\s+in\s+[\w.]*\bannotations\b`)
	annTmplIndex  = regexp.MustCompile(`\bindex\s+[\w.$]*\bannotations\s+"([^"\\]*)"`)
	annWord       = regexp.MustCompile(`\bannotations\b`)
	wholeMetadata = regexp.MustCompile(`\bmetadata\b\s*[^.\[\s]|\bmetadata\s*$`)
	wholeObject   = regexp.MustCompile(`(?:\bobject|\.Object)\b\s*(?:[^.\[\s]|$)`)
)

// annotationsRead returns the annotation keys src (a CEL condition or a
// message template) names, or all when it may read others too.
func annotationsRead(src string) (keys []string, all bool) {
	if wholeMetadata.MatchString(src) || wholeObject.MatchString(src) {
		return nil, true
	}
	accounted := 0
	add := func(k string) { keys = append(keys, k); accounted++ }
	for _, m := range annIndex.FindAllStringSubmatch(src, -1) {
		add(m[1] + m[2])
	}
	for _, m := range annField.FindAllStringSubmatch(src, -1) {
		if m[2] == "(" { // a method or macro on the map: annotations.exists(…)
			return nil, true
		}
		add(m[1])
	}
	for _, m := range annIn.FindAllStringSubmatch(src, -1) {
		add(m[1] + m[2])
	}
	for _, m := range annTmplIndex.FindAllStringSubmatch(src, -1) {
		add(m[1])
	}
	if len(annWord.FindAllStringIndex(src, -1)) != accounted {
		return nil, true
	}
	return keys, false
}

// AnnotationsRead says which annotations of kind's objects some rule
// reads: the keys it names, or all (when a rule reads them in a way
// annotationsRead does not follow). Rules without a CEL condition, an
// exclude.when or a template over the object read none.
func (s *Set) AnnotationsRead(kind string) (keys []string, all bool) {
	for _, r := range s.byKind[kind] {
		var srcs []string
		if r.condition != nil {
			srcs = append(srcs, r.condition.source)
		}
		if r.message != nil && r.message.needsObject {
			srcs = append(srcs, r.message.source)
		}
		if src := r.exclusion.whenSource(); src != "" {
			srcs = append(srcs, src)
		}
		for _, src := range srcs {
			k, a := annotationsRead(src)
			if a {
				return nil, true
			}
			keys = append(keys, k...)
		}
	}
	slices.Sort(keys)
	return slices.Compact(keys), false
}

// joinSources is the text of a rule's templates, for annotationsRead.
func joinSources(srcs ...string) string { return strings.Join(srcs, "\n") }
