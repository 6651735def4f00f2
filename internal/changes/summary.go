package changes

import (
	"strconv"
	"strings"
)

// Summary says what changed between two pod templates, in words a person
// reads in an alert: names of containers, env vars, resources, volumes and
// referenced objects, and images and quantities old → new. It never holds
// a value of an env var, an argument, a command or a ConfigMap/Secret: a
// pod template's values are often credentials, and alerts reach channels
// many people read.
type Summary struct {
	Items []Item
	// More counts the items left out beyond MaxItems: said, not dropped
	// silently.
	More int
}

// Item is one change of a Summary.
type Item struct {
	Category Category
	// Container is the container the change is in ("" for the pod:
	// volumes, references, the template's other fields).
	Container string
	Text      string // e.g. "image app: shop/checkout:1.8.2 → 1.9.0"
}

// Category groups items so that a message layer can pick or order them.
type Category string

const (
	CatContainer Category = "container" // added or removed
	CatImage     Category = "image"
	CatEnv       Category = "env"
	CatArgs      Category = "args" // args or command changed
	CatResources Category = "resources"
	CatProbe     Category = "probe"
	CatVolume    Category = "volume"
	CatRef       Category = "ref" // a ConfigMap or Secret referenced or no longer
	CatRestart   Category = "restart"
	CatOther     Category = "other"
)

// MaxItems bounds a Summary: an alert names the first changes and counts
// the rest.
const MaxItems = 8

// maxText bounds what an item quotes from the template (an image, a name):
// whoever edits a workload chooses those strings.
const maxText = 160

// add appends an item, or counts it once the summary is full.
func (s *Summary) add(cat Category, container, text string) {
	if len(s.Items) >= MaxItems {
		s.More++
		return
	}
	s.Items = append(s.Items, Item{Category: cat, Container: container, Text: text})
}

// Empty reports whether the summary says nothing changed.
func (s Summary) Empty() bool { return len(s.Items) == 0 && s.More == 0 }

// String joins the items, e.g. "image app: shop/checkout:1.8.2 → 1.9.0;
// env DB_POOL changed; limits memory 256Mi → 512Mi; and 2 more".
func (s Summary) String() string {
	if s.Empty() {
		return "no change to the pod template"
	}
	parts := make([]string, 0, len(s.Items)+1)
	for _, it := range s.Items {
		parts = append(parts, it.Text)
	}
	if s.More > 0 {
		parts = append(parts, "and "+strconv.Itoa(s.More)+" more")
	}
	return strings.Join(parts, "; ")
}

// clip bounds a quoted string, marking the cut.
func clip(s string) string { return clipTo(s, maxText) }

// imageChange writes old → new, sharing the repository when only the tag
// or digest differs: "shop/checkout:1.8.2 → 1.9.0".
func imageChange(old, new string) string {
	repoOld, tagOld := splitImage(old)
	repoNew, tagNew := splitImage(new)
	if repoOld == repoNew && tagOld != "" && tagNew != "" {
		return clip(old) + " → " + clip(tagNew)
	}
	return clip(old) + " → " + clip(new)
}

// splitImage splits an image reference into repository and tag or digest
// (without the separator); a registry's port is not a tag.
func splitImage(ref string) (repo, tag string) {
	if i := strings.LastIndexByte(ref, '@'); i >= 0 {
		return ref[:i], ref[i+1:]
	}
	i := strings.LastIndexByte(ref, ':')
	if i < 0 || strings.Contains(ref[i+1:], "/") {
		return ref, ""
	}
	return ref[:i], ref[i+1:]
}
