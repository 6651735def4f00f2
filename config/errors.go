package config

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Error is one problem in the configuration, located in its file.
type Error struct {
	File      string
	Line, Col int
	// Path inside the document, e.g. rules[0].sinks[1]; empty for the
	// document itself.
	Path string
	Msg  string
}

func (e *Error) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg)
	}
	return fmt.Sprintf("%s:%d:%d: %s: %s", e.File, e.Line, e.Col, e.Path, e.Msg)
}

// Errors is every problem found in one configuration, in file order, so a
// single run of herald validate shows them all.
type Errors []*Error

func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

func (es Errors) sorted() Errors {
	slices.SortStableFunc(es, func(a, b *Error) int {
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Col, b.Col))
	})
	return es
}
