package tmpl

import (
	"fmt"
	"reflect"
	"strings"
	"text/template/parse"
)

var reflectValueType = reflect.TypeFor[reflect.Value]()

// evalPipeline runs a pipeline's commands, each one's result piped into
// the next as its last argument, and declares or sets its variables.
func (s *state) evalPipeline(dot reflect.Value, pipe *parse.PipeNode) reflect.Value {
	if pipe == nil {
		return reflect.Value{}
	}
	s.at(pipe)
	value := missingVal
	for _, cmd := range pipe.Cmds {
		value = s.evalCommand(dot, cmd, value)
		// A value in an empty interface is handled as what it holds.
		if value.Kind() == reflect.Interface && value.Type().NumMethod() == 0 {
			value = reflect.ValueOf(value.Interface())
		}
	}
	for _, v := range pipe.Decl {
		if pipe.IsAssign {
			s.setVar(v.Ident[0], value)
		} else {
			s.push(v.Ident[0], value)
		}
	}
	return value
}

func (s *state) evalCommand(dot reflect.Value, cmd *parse.CommandNode, final reflect.Value) reflect.Value {
	first := cmd.Args[0]
	switch n := first.(type) {
	case *parse.FieldNode:
		return s.evalFieldNode(dot, n, cmd.Args, final)
	case *parse.ChainNode:
		return s.evalChainNode(dot, n, cmd.Args, final)
	case *parse.IdentifierNode:
		return s.evalFunction(dot, n, cmd, cmd.Args, final)
	case *parse.PipeNode:
		// A parenthesized pipeline has its arguments inside.
		s.notAFunction(cmd.Args, final)
		return s.evalPipeline(dot, n)
	case *parse.VariableNode:
		return s.evalVariableNode(dot, n, cmd.Args, final)
	}
	// A constant or dot: a value, which takes no arguments.
	s.at(first)
	s.notAFunction(cmd.Args, final)
	if _, isNil := first.(*parse.NilNode); isNil {
		s.errorf("nil is not a command")
	}
	return s.evalEmptyInterface(dot, first)
}

func (s *state) notAFunction(args []parse.Node, final reflect.Value) {
	if len(args) > 1 || !isMissing(final) {
		s.errorf("can't give argument to non-function %s", args[0])
	}
}

// idealConstant gives an untyped number in a template the type Go would:
// int, float64 or complex128.
func (s *state) idealConstant(c *parse.NumberNode) reflect.Value {
	s.at(c)
	switch {
	case c.IsComplex:
		return reflect.ValueOf(c.Complex128)
	case c.IsFloat && !isHexInt(c.Text) && !isRuneInt(c.Text) && strings.ContainsAny(c.Text, ".eEpP"):
		return reflect.ValueOf(c.Float64)
	case c.IsInt:
		n := int(c.Int64)
		if int64(n) != c.Int64 {
			s.errorf("%s overflows int", c.Text)
		}
		return reflect.ValueOf(n)
	case c.IsUint:
		s.errorf("%s overflows int", c.Text)
	}
	return reflect.Value{}
}

func isRuneInt(s string) bool { return len(s) > 0 && s[0] == '\'' }

func isHexInt(s string) bool {
	return len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') && !strings.ContainsAny(s, "pP")
}

func (s *state) evalFieldNode(dot reflect.Value, field *parse.FieldNode, args []parse.Node, final reflect.Value) reflect.Value {
	s.at(field)
	return s.evalFieldChain(dot, dot, field, field.Ident, args, final)
}

func (s *state) evalChainNode(dot reflect.Value, chain *parse.ChainNode, args []parse.Node, final reflect.Value) reflect.Value {
	s.at(chain)
	if len(chain.Field) == 0 {
		s.errorf("internal error: no fields in evalChainNode")
	}
	if chain.Node.Type() == parse.NodeNil {
		s.errorf("indirection through explicit nil in %s", chain)
	}
	pipe := s.evalArg(dot, nil, chain.Node)
	return s.evalFieldChain(dot, pipe, chain, chain.Field, args, final)
}

func (s *state) evalVariableNode(dot reflect.Value, v *parse.VariableNode, args []parse.Node, final reflect.Value) reflect.Value {
	s.at(v)
	value := s.varValue(v.Ident[0])
	if len(v.Ident) == 1 {
		s.notAFunction(args, final)
		return value
	}
	return s.evalFieldChain(dot, value, v, v.Ident[1:], args, final)
}

// evalFieldChain follows .a.b.c from receiver; only the last may take
// arguments (a method's).
func (s *state) evalFieldChain(dot, receiver reflect.Value, node parse.Node, ident []string, args []parse.Node, final reflect.Value) reflect.Value {
	n := len(ident)
	for i := 0; i < n-1; i++ {
		receiver = s.evalField(dot, ident[i], node, nil, missingVal, receiver)
	}
	return s.evalField(dot, ident[n-1], node, args, final, receiver)
}

// evalField is .name on receiver: one of the listed methods (time.go), a
// struct field, or a map key.
func (s *state) evalField(dot reflect.Value, name string, node parse.Node, args []parse.Node, final, receiver reflect.Value) reflect.Value {
	if !receiver.IsValid() {
		if s.tmpl.missing == MissingError {
			s.errorf("nil data; no entry for key %q", name)
		}
		return reflect.Value{}
	}
	typ := receiver.Type()
	receiver, isNil := indirect(receiver)
	if receiver.Kind() == reflect.Interface && isNil {
		s.errorf("nil pointer evaluating %s.%s", typ, name)
	}
	if method, ok := methodOf(receiver, name); ok {
		return s.evalCall(dot, method, false, node, name, args, final)
	}
	hasArgs := len(args) > 1 || !isMissing(final)
	switch receiver.Kind() {
	case reflect.Struct:
		if f, ok := receiver.Type().FieldByName(name); ok {
			field, err := receiver.FieldByIndexErr(f.Index)
			if !f.IsExported() {
				s.errorf("%s is an unexported field of struct type %s", name, typ)
			}
			if err != nil {
				s.errorf("%v", err)
			}
			if hasArgs {
				s.errorf("%s has arguments but cannot be invoked as function", name)
			}
			return field
		}
	case reflect.Map:
		key := reflect.ValueOf(name)
		if key.Type().AssignableTo(receiver.Type().Key()) {
			if hasArgs {
				s.errorf("%s is not a method but has arguments", name)
			}
			result := receiver.MapIndex(key)
			if !result.IsValid() {
				switch s.tmpl.missing {
				case MissingZero:
					result = reflect.Zero(receiver.Type().Elem())
				case MissingError:
					s.errorf("map has no entry for key %q", name)
				}
			}
			return result
		}
	case reflect.Pointer:
		if elem := receiver.Type().Elem(); elem.Kind() == reflect.Struct {
			if _, ok := elem.FieldByName(name); !ok {
				break
			}
		}
		if isNil {
			s.errorf("nil pointer evaluating %s.%s", typ, name)
		}
	}
	s.errorf("can't evaluate field %s in type %s", name, typ)
	return reflect.Value{}
}

func (s *state) evalFunction(dot reflect.Value, node *parse.IdentifierNode, cmd parse.Node, args []parse.Node, final reflect.Value) reflect.Value {
	s.at(node)
	name := node.Ident
	// The template's own functions come first: they may replace a
	// built-in.
	if f, ok := s.tmpl.funcs[name]; ok {
		return s.evalCall(dot, f, false, cmd, name, args, final)
	}
	if f, ok := builtins[name]; ok {
		return s.evalCall(dot, f, true, cmd, name, args, final)
	}
	s.errorf("%q is not a defined function", name)
	return reflect.Value{}
}

// evalCall calls fun with the arguments args[1:] (args[0] names the
// function) and final, converted to its parameter types.
func (s *state) evalCall(dot, fun reflect.Value, builtin bool, node parse.Node, name string, args []parse.Node, final reflect.Value) reflect.Value {
	if args != nil {
		args = args[1:]
	}
	typ := fun.Type()
	numIn := len(args)
	if !isMissing(final) {
		numIn++
	}
	numFixed := typ.NumIn()
	if typ.IsVariadic() {
		numFixed--
		if numIn < numFixed {
			s.errorf("wrong number of args for %s: want at least %d got %d", name, numFixed, numIn)
		}
	} else if numIn != typ.NumIn() {
		s.errorf("wrong number of args for %s: want %d got %d", name, typ.NumIn(), numIn)
	}
	if !goodResults(typ) {
		s.errorf("can't call method/function %q with %d results", name, typ.NumOut())
	}
	unwrap := func(v reflect.Value) reflect.Value {
		if v.Type() == reflectValueType {
			v = v.Interface().(reflect.Value)
		}
		return v
	}
	// and, or: stop at the first argument that decides.
	if builtin && (name == "and" || name == "or") {
		argType := typ.In(0)
		var v reflect.Value
		for _, arg := range args {
			v = s.evalArg(dot, argType, arg).Interface().(reflect.Value)
			if truth(v) == (name == "or") {
				return v
			}
		}
		if !isMissing(final) {
			v = unwrap(s.validateType(final, argType))
		}
		return v
	}
	argv := make([]reflect.Value, numIn)
	i := 0
	for ; i < numFixed && i < len(args); i++ {
		argv[i] = s.evalArg(dot, typ.In(i), args[i])
	}
	if typ.IsVariadic() {
		argType := typ.In(typ.NumIn() - 1).Elem()
		for ; i < len(args); i++ {
			argv[i] = s.evalArg(dot, argType, args[i])
		}
	}
	if !isMissing(final) {
		t := typ.In(typ.NumIn() - 1)
		if typ.IsVariadic() {
			if numIn-1 < numFixed {
				t = typ.In(numIn - 1) // the final argument fills a fixed parameter
			} else {
				t = t.Elem()
			}
		}
		argv[i] = s.validateType(final, t)
	}
	var v reflect.Value
	var err error
	if builtin && name == "call" && len(args) > 0 {
		// call's parameters are reflect.Values; each argument is one.
		values := make([]reflect.Value, len(argv))
		for i, a := range argv {
			values[i] = a.Interface().(reflect.Value)
		}
		v, err = callNamed(args[0].String(), values[0], values[1:]...)
	} else {
		v, err = safeCall(fun, argv)
	}
	if err != nil {
		s.at(node)
		s.errorf("error calling %s: %w", name, err)
	}
	return unwrap(v)
}

// safeCall calls fun, turning a panic or a returned error into err.
func safeCall(fun reflect.Value, args []reflect.Value) (v reflect.Value, err error) {
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(error); ok {
				err = e
			} else {
				err = fmt.Errorf("%v", r)
			}
		}
	}()
	out := fun.Call(args)
	if len(out) == 2 && !out[1].IsNil() {
		return out[0], out[1].Interface().(error)
	}
	return out[0], nil
}

func truth(v reflect.Value) bool {
	t, _ := isTrue(indirectInterface(v))
	return t
}
