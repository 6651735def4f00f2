package rules

import "fmt"

// render makes the default title and text of a finding.
func render(f Finding, d Detection) (title, text string) {
	obj := f.Object.Name
	if f.Object.Namespace != "" {
		obj = f.Object.Namespace + "/" + f.Object.Name
	}
	title = fmt.Sprintf("%s: %s %s", f.Reason, f.Object.Kind, obj)
	if f.Container != "" {
		title += " container " + f.Container
	}
	text = title
	if d.Detail != "" {
		text += ": " + d.Detail
	}
	return title, text
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
