package tmpl

import (
	"reflect"
	"text/template/parse"
)

// Arguments: evaluating a function's arguments and fitting each value to
// its parameter's type, as text/template does.

// canBeNil: types whose zero value is nil (and reflect.Value, whose zero
// value is "no value").
func canBeNil(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Chan, reflect.Func, reflect.Interface, reflect.Map, reflect.Pointer, reflect.Slice:
		return true
	case reflect.Struct:
		return t == reflectValueType
	}
	return false
}

// validateType makes value fit a parameter of type t (nil t: any value),
// dereferencing or taking the address where that makes it fit.
func (s *state) validateType(value reflect.Value, t reflect.Type) reflect.Value {
	if !value.IsValid() {
		if t == nil {
			return reflect.ValueOf(nil)
		}
		if canBeNil(t) {
			return reflect.Zero(t)
		}
		s.errorf("invalid value; expected %s", t)
	}
	if t == reflectValueType && value.Type() != t {
		return reflect.ValueOf(value)
	}
	if t == nil || value.Type().AssignableTo(t) {
		return value
	}
	if value.Kind() == reflect.Interface && !value.IsNil() {
		value = value.Elem()
		if value.Type().AssignableTo(t) {
			return value
		}
	}
	switch {
	case value.Kind() == reflect.Pointer && value.Type().Elem().AssignableTo(t):
		value = value.Elem()
		if !value.IsValid() {
			s.errorf("dereference of nil pointer of type %s", t)
		}
	case reflect.PointerTo(value.Type()).AssignableTo(t) && value.CanAddr():
		value = value.Addr()
	default:
		s.errorf("wrong type for value; expected %s; got %s", t, value.Type())
	}
	return value
}

// evalArg evaluates an argument for a parameter of type t.
func (s *state) evalArg(dot reflect.Value, t reflect.Type, n parse.Node) reflect.Value {
	s.at(n)
	switch arg := n.(type) {
	case *parse.DotNode:
		return s.validateType(dot, t)
	case *parse.NilNode:
		if t != nil && canBeNil(t) {
			return reflect.Zero(t)
		}
		s.errorf("cannot assign nil to %s", t)
	case *parse.FieldNode:
		return s.validateType(s.evalFieldNode(dot, arg, []parse.Node{n}, missingVal), t)
	case *parse.VariableNode:
		return s.validateType(s.evalVariableNode(dot, arg, nil, missingVal), t)
	case *parse.PipeNode:
		return s.validateType(s.evalPipeline(dot, arg), t)
	case *parse.IdentifierNode:
		return s.validateType(s.evalFunction(dot, arg, arg, nil, missingVal), t)
	case *parse.ChainNode:
		return s.validateType(s.evalChainNode(dot, arg, nil, missingVal), t)
	}
	if t == nil {
		return s.evalEmptyInterface(dot, n)
	}
	if v, want, ok := constantOf(t, n); want != "" {
		if !ok {
			s.errorf("expected %s; found %s", want, n)
		}
		return v
	}
	switch {
	case t.Kind() == reflect.Interface && t.NumMethod() == 0:
		return s.evalEmptyInterface(dot, n)
	case t == reflectValueType:
		return reflect.ValueOf(s.evalEmptyInterface(dot, n))
	}
	s.errorf("can't handle %s for arg of type %s", n, t)
	return reflect.Value{}
}

func (s *state) evalEmptyInterface(dot reflect.Value, n parse.Node) reflect.Value {
	s.at(n)
	switch n := n.(type) {
	case *parse.BoolNode:
		return reflect.ValueOf(n.True)
	case *parse.DotNode:
		return dot
	case *parse.FieldNode:
		return s.evalFieldNode(dot, n, nil, missingVal)
	case *parse.IdentifierNode:
		return s.evalFunction(dot, n, n, nil, missingVal)
	case *parse.NumberNode:
		return s.idealConstant(n)
	case *parse.StringNode:
		return reflect.ValueOf(n.Text)
	case *parse.VariableNode:
		return s.evalVariableNode(dot, n, nil, missingVal)
	case *parse.PipeNode:
		return s.evalPipeline(dot, n)
	case *parse.ChainNode:
		return s.evalChainNode(dot, n, nil, missingVal)
	}
	s.errorf("can't handle assignment of %s to empty interface argument", n)
	return reflect.Value{}
}

// constantOf is the constant n as a value of type t. want names the kind
// of constant t takes ("" for a type no constant is written for); ok is
// false when n is not one.
func constantOf(t reflect.Type, n parse.Node) (v reflect.Value, want string, ok bool) {
	v = reflect.New(t).Elem()
	num, isNum := n.(*parse.NumberNode)
	switch t.Kind() {
	case reflect.Bool:
		b, ok := n.(*parse.BoolNode)
		if ok {
			v.SetBool(b.True)
		}
		return v, "bool", ok
	case reflect.String:
		str, ok := n.(*parse.StringNode)
		if ok {
			v.SetString(str.Text)
		}
		return v, "string", ok
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		ok = isNum && num.IsInt
		if ok {
			v.SetInt(num.Int64)
		}
		return v, "integer", ok
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		ok = isNum && num.IsUint
		if ok {
			v.SetUint(num.Uint64)
		}
		return v, "unsigned integer", ok
	case reflect.Float32, reflect.Float64:
		ok = isNum && num.IsFloat
		if ok {
			v.SetFloat(num.Float64)
		}
		return v, "float", ok
	case reflect.Complex64, reflect.Complex128:
		ok = isNum && num.IsComplex
		if ok {
			v.SetComplex(num.Complex128)
		}
		return v, "complex", ok
	}
	return reflect.Value{}, "", false
}
