// Package tmpl runs Go templates (the text/template language, parsed by
// the standard library's text/template/parse) without looking methods up
// by name.
//
// Why not text/template itself: its executor calls
// reflect.Value.MethodByName with names known only at run time, and a
// binary that can reach such a call makes the Go linker keep every
// exported method of every type that is ever stored in an interface — for
// herald, the generated methods of every Kubernetes API type it links.
// That alone was 8 of the binary's 36.6 MB (docs/performance.md, issue
// #17). herald's template data are structs of fields, maps and slices, so
// nothing is lost but method calls; the one type with methods worth
// calling, time.Time, has its methods listed here (time.go).
//
// Everything else follows text/template: the same syntax, the same
// built-in functions, missingkey options, truth, printing, map ordering in
// range, and error texts ("template: NAME:LINE:COL: executing ..."), so a
// template written for text/template renders the same (tmpl_test.go runs
// both on the same templates).
package tmpl

import (
	"fmt"
	"io"
	"reflect"
	"text/template/parse"
)

// FuncMap names the functions a template may call, as in text/template:
// each value is a function with one result, or two where the second is an
// error.
type FuncMap map[string]any

// MissingKey says what indexing a map with a key it lacks gives.
type MissingKey int

const (
	// MissingInvalid (text/template's default) gives "no value", printed
	// as "<no value>".
	MissingInvalid MissingKey = iota
	// MissingZero gives the map element type's zero value.
	MissingZero
	// MissingError fails the execution.
	MissingError
)

// Template is a parsed template, with the templates it defines.
type Template struct {
	name    string
	trees   map[string]*parse.Tree
	funcs   map[string]reflect.Value
	missing MissingKey
}

// Parse parses src as a template called name that may call funcs (and the
// built-in functions). Its errors read as text/template's:
// "template: NAME:LINE: ...".
func Parse(name, src string, funcs FuncMap, missing MissingKey) (*Template, error) {
	t := &Template{name: name, funcs: map[string]reflect.Value{}, missing: missing}
	known := map[string]any{}
	for n := range builtins {
		known[n] = true
	}
	for n, f := range funcs {
		v := reflect.ValueOf(f)
		if err := checkFunc(n, v); err != nil {
			return nil, err
		}
		t.funcs[n] = v
		known[n] = f
	}
	trees, err := parse.Parse(name, src, "", "", known)
	if err != nil {
		return nil, err
	}
	t.trees = trees
	return t, nil
}

var errorType = reflect.TypeFor[error]()

// checkFunc refuses what text/template refuses to register: not a
// function, or a function whose results are not (value) or (value, error).
func checkFunc(name string, f reflect.Value) error {
	if f.Kind() != reflect.Func {
		return fmt.Errorf("template function %q is not a function", name)
	}
	if !goodResults(f.Type()) {
		return fmt.Errorf("template function %q must return one value, or a value and an error", name)
	}
	return nil
}

func goodResults(t reflect.Type) bool {
	switch t.NumOut() {
	case 1:
		return true
	case 2:
		return t.Out(1) == errorType
	}
	return false
}

// Execute renders the template for data into w. A write error ends the
// execution and is returned as it is (callers bound their output with a
// writer that fails past a limit).
func (t *Template) Execute(w io.Writer, data any) error {
	v, ok := data.(reflect.Value)
	if !ok {
		v = reflect.ValueOf(data)
	}
	s := &state{tmpl: t, name: t.name, tree: t.trees[t.name], w: w, vars: []variable{{"$", v}}}
	return s.run(v)
}

// ExecError is a failure while executing, with where it happened in the
// message.
type ExecError struct {
	Name string
	Err  error
}

func (e ExecError) Error() string { return e.Err.Error() }
func (e ExecError) Unwrap() error { return e.Err }
