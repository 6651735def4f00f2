package tmpl

import (
	"fmt"
	"io"
	"iter"
	"reflect"
	"text/template/parse"
)

// maxDepth bounds nested {{template}} calls, as text/template does.
const maxDepth = 100000

type variable struct {
	name  string
	value reflect.Value
}

// state is one execution: where output goes, the variables in scope, and
// the node being evaluated (for error positions).
type state struct {
	tmpl  *Template
	name  string // of the template being executed (changes in {{template}})
	tree  *parse.Tree
	w     io.Writer
	node  parse.Node
	vars  []variable
	depth int
}

// control tells an enclosing {{range}} that {{break}} or {{continue}} ran.
type control int

const (
	proceed control = iota
	breakLoop
	continueLoop
)

// writeError carries a failed write out of the walk unchanged.
type writeError struct{ err error }

// noFinal marks "no value piped in" (a command's final argument), which
// differs from a piped-in invalid value.
type noFinal struct{}

var missingVal = reflect.ValueOf(noFinal{})

func isMissing(v reflect.Value) bool { return v.IsValid() && v.Type() == missingVal.Type() }

func (s *state) run(dot reflect.Value) (err error) {
	defer func() {
		switch r := recover().(type) {
		case nil:
		case ExecError:
			err = r
		case writeError:
			err = r.err
		default:
			// A template never takes the process down: a failure that
			// escaped the checks above is still only this template's error.
			err = fmt.Errorf("template: %s: %v", s.name, r)
		}
	}()
	if s.tree == nil || s.tree.Root == nil {
		s.errorf("%q is an incomplete or empty template", s.name)
	}
	s.walk(dot, s.tree.Root)
	return nil
}

func (s *state) at(n parse.Node) { s.node = n }

// errorf ends the execution with text/template's message layout.
func (s *state) errorf(format string, args ...any) {
	inner := fmt.Errorf(format, args...)
	var err error
	if s.node == nil {
		err = fmt.Errorf("template: %s: %w", s.name, inner)
	} else {
		location, context := s.tree.ErrorContext(s.node)
		err = fmt.Errorf("template: %s: executing %q at <%s>: %w", location, s.name, context, inner)
	}
	panic(ExecError{Name: s.name, Err: err})
}

func (s *state) write(p []byte) {
	if _, err := s.w.Write(p); err != nil {
		panic(writeError{err})
	}
}

// Variables: a stack; a block's declarations are popped when it ends.

func (s *state) mark() int { return len(s.vars) }

func (s *state) pop(mark int) { s.vars = s.vars[:mark] }

func (s *state) push(name string, v reflect.Value) { s.vars = append(s.vars, variable{name, v}) }

func (s *state) setVar(name string, v reflect.Value) {
	for i := len(s.vars) - 1; i >= 0; i-- {
		if s.vars[i].name == name {
			s.vars[i].value = v
			return
		}
	}
	s.errorf("undefined variable: %s", name)
}

func (s *state) varValue(name string) reflect.Value {
	for i := len(s.vars) - 1; i >= 0; i-- {
		if s.vars[i].name == name {
			return s.vars[i].value
		}
	}
	s.errorf("undefined variable: %s", name)
	return reflect.Value{}
}

// walk renders node with dot as "."; it reports a {{break}} or
// {{continue}} to the range around it.
func (s *state) walk(dot reflect.Value, node parse.Node) control {
	s.at(node)
	switch n := node.(type) {
	case *parse.ActionNode:
		v := s.evalPipeline(dot, n.Pipe)
		if len(n.Pipe.Decl) == 0 {
			s.printValue(n, v)
		}
	case *parse.BreakNode:
		return breakLoop
	case *parse.ContinueNode:
		return continueLoop
	case *parse.CommentNode:
	case *parse.IfNode:
		return s.walkIfOrWith(false, dot, n.Pipe, n.List, n.ElseList)
	case *parse.WithNode:
		return s.walkIfOrWith(true, dot, n.Pipe, n.List, n.ElseList)
	case *parse.ListNode:
		for _, c := range n.Nodes {
			if ctl := s.walk(dot, c); ctl != proceed {
				return ctl
			}
		}
	case *parse.RangeNode:
		s.walkRange(dot, n)
	case *parse.TemplateNode:
		s.walkTemplate(dot, n)
	case *parse.TextNode:
		s.write(n.Text)
	default:
		s.errorf("unknown node: %s", node)
	}
	return proceed
}

func (s *state) walkIfOrWith(with bool, dot reflect.Value, pipe *parse.PipeNode, list, elseList *parse.ListNode) control {
	defer s.pop(s.mark())
	val := s.evalPipeline(dot, pipe)
	truth, ok := isTrue(indirectInterface(val))
	if !ok {
		s.errorf("if/with can't use %v", val)
	}
	switch {
	case truth && with:
		return s.walk(val, list)
	case truth:
		return s.walk(dot, list)
	case elseList != nil:
		return s.walk(dot, elseList)
	}
	return proceed
}

// isTrue is text/template's truth: non-zero numbers and booleans,
// non-empty strings and collections, non-nil pointers; ok is false for a
// value with no truth (a struct is always true).
func isTrue(v reflect.Value) (truth, ok bool) {
	if !v.IsValid() {
		return false, true
	}
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() > 0, true
	case reflect.Bool:
		return v.Bool(), true
	case reflect.Complex64, reflect.Complex128:
		return v.Complex() != 0, true
	case reflect.Chan, reflect.Func, reflect.Pointer, reflect.Interface, reflect.UnsafePointer:
		return !v.IsNil(), true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int() != 0, true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return v.Uint() != 0, true
	case reflect.Float32, reflect.Float64:
		return v.Float() != 0, true
	case reflect.Struct:
		return true, true
	}
	return false, false
}

func (s *state) walkRange(dot reflect.Value, r *parse.RangeNode) {
	s.at(r)
	defer s.pop(s.mark())
	// {{range $e := ...}} / {{range $i, $e := ...}} declare the variables
	// here, the assigning forms (=) set ones declared outside; each
	// element then sets them.
	declared := len(s.vars)
	val, _ := indirect(s.evalPipeline(dot, r.Pipe))
	decl := r.Pipe.Decl
	setLoopVars := func(index, elem reflect.Value) {
		vals := []reflect.Value{elem}
		if len(decl) > 1 {
			vals = []reflect.Value{index, elem}
		}
		for i, d := range decl {
			if r.Pipe.IsAssign {
				s.setVar(d.Ident[0], vals[i])
			} else {
				s.vars[declared+i].value = vals[i]
			}
		}
	}
	// iterate runs the body once; false when {{break}} ended the loop.
	iterate := func(index, elem reflect.Value) bool {
		setLoopVars(index, elem)
		mark := s.mark()
		ctl := s.walk(elem, r.List)
		s.pop(mark)
		return ctl != breakLoop
	}
	ran := false
	switch val.Kind() {
	case reflect.Array, reflect.Slice:
		for i := 0; i < val.Len(); i++ {
			ran = true
			if !iterate(reflect.ValueOf(i), val.Index(i)) {
				break
			}
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if len(decl) > 1 {
			s.errorf("can't use %v to iterate over more than one variable", val)
		}
		for i := range countTo(val) {
			ran = true
			if !iterate(i, i) {
				break
			}
		}
	case reflect.Map:
		for _, k := range sortedKeys(val) {
			ran = true
			if !iterate(k, val.MapIndex(k)) {
				break
			}
		}
	case reflect.Chan:
		if val.IsNil() {
			break
		}
		if val.Type().ChanDir() == reflect.SendDir {
			s.errorf("range over send-only channel %v", val)
		}
		for i := 0; ; i++ {
			elem, ok := val.Recv()
			if !ok {
				break
			}
			ran = true
			if !iterate(reflect.ValueOf(i), elem) {
				break
			}
		}
	case reflect.Invalid:
		// Ranging over nothing (a missing key, a nil map) is not an error.
	default:
		s.errorf("range can't iterate over %v", val)
	}
	if !ran && r.ElseList != nil {
		s.walk(dot, r.ElseList)
	}
}

func (s *state) walkTemplate(dot reflect.Value, t *parse.TemplateNode) {
	s.at(t)
	tree := s.tmpl.trees[t.Name]
	if tree == nil {
		s.errorf("template %q not defined", t.Name)
	}
	if s.depth == maxDepth {
		s.errorf("exceeded maximum template depth (%v)", maxDepth)
	}
	dot = s.evalPipeline(dot, t.Pipe)
	inner := *s
	inner.depth++
	inner.name, inner.tree = t.Name, tree
	inner.vars = []variable{{"$", dot}}
	inner.walk(dot, tree.Root)
}

// printValue writes v as text/template does: fmt's %v, "<no value>" for
// nothing, a pointer's target.
func (s *state) printValue(n parse.Node, v reflect.Value) {
	s.at(n)
	iface, ok := printableValue(v)
	if !ok {
		s.errorf("can't print %s of type %s", n, v.Type())
	}
	if _, err := fmt.Fprint(s.w, iface); err != nil {
		panic(writeError{err})
	}
}

var stringerType = reflect.TypeFor[fmt.Stringer]()

func printableValue(v reflect.Value) (any, bool) {
	if v.Kind() == reflect.Pointer {
		v, _ = indirect(v)
	}
	if !v.IsValid() {
		return "<no value>", true
	}
	if !v.Type().Implements(errorType) && !v.Type().Implements(stringerType) {
		ptr := reflect.PointerTo(v.Type())
		switch {
		case v.CanAddr() && (ptr.Implements(errorType) || ptr.Implements(stringerType)):
			v = v.Addr()
		case v.Kind() == reflect.Chan || v.Kind() == reflect.Func:
			return nil, false
		}
	}
	return v.Interface(), true
}

// countTo yields 0, 1, … up to n (excluded) as int64s, or uint64s for an
// unsigned n, as {{range n}} visits them.
func countTo(n reflect.Value) iter.Seq[reflect.Value] {
	return func(yield func(reflect.Value) bool) {
		if n.CanInt() {
			for i := int64(0); i < n.Int(); i++ {
				if !yield(reflect.ValueOf(i)) {
					return
				}
			}
			return
		}
		for i := uint64(0); i < n.Uint(); i++ {
			if !yield(reflect.ValueOf(i)) {
				return
			}
		}
	}
}

// indirect follows pointers and interfaces to a value; isNil when one of
// them was nil (v is then that nil).
func indirect(v reflect.Value) (rv reflect.Value, isNil bool) {
	for ; v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface; v = v.Elem() {
		if v.IsNil() {
			return v, true
		}
	}
	return v, false
}

// indirectInterface unwraps one interface; a nil one becomes no value.
func indirectInterface(v reflect.Value) reflect.Value {
	if v.Kind() != reflect.Interface {
		return v
	}
	if v.IsNil() {
		return reflect.Value{}
	}
	return v.Elem()
}
