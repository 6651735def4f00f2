package tmpl

import (
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"strings"
	"unicode"
	"unicode/utf8"
)

// builtins are text/template's predefined functions, with its meanings.
// Parameters of type reflect.Value receive the argument as it is (also
// "no value"); evalCall decides and/or itself, stopping early.
var builtins = map[string]reflect.Value{
	"and":      reflect.ValueOf(andOr),
	"or":       reflect.ValueOf(andOr),
	"not":      reflect.ValueOf(func(v reflect.Value) bool { return !truth(v) }),
	"len":      reflect.ValueOf(length),
	"index":    reflect.ValueOf(index),
	"slice":    reflect.ValueOf(slice),
	"call":     reflect.ValueOf(call),
	"print":    reflect.ValueOf(fmt.Sprint),
	"printf":   reflect.ValueOf(fmt.Sprintf),
	"println":  reflect.ValueOf(fmt.Sprintln),
	"html":     reflect.ValueOf(func(args ...any) string { return htmlEscape(argsText(args)) }),
	"js":       reflect.ValueOf(func(args ...any) string { return jsEscape(argsText(args)) }),
	"urlquery": reflect.ValueOf(func(args ...any) string { return url.QueryEscape(argsText(args)) }),
	"eq":       reflect.ValueOf(eq),
	"ne":       reflect.ValueOf(func(a, b reflect.Value) (bool, error) { e, err := eq(a, b); return !e, err }),
	"lt":       reflect.ValueOf(lt),
	"le":       reflect.ValueOf(func(a, b reflect.Value) (bool, error) { return lessOrEqual(a, b) }),
	"gt":       reflect.ValueOf(func(a, b reflect.Value) (bool, error) { le, err := lessOrEqual(a, b); return !le, err }),
	"ge":       reflect.ValueOf(func(a, b reflect.Value) (bool, error) { l, err := lt(a, b); return !l, err }),
}

// andOr only gives evalCall the signature; it never runs.
func andOr(first reflect.Value, rest ...reflect.Value) reflect.Value { return first }

func length(item reflect.Value) (int, error) {
	item, isNil := indirect(item)
	if isNil {
		return 0, errors.New("len of nil pointer")
	}
	switch item.Kind() {
	case reflect.Array, reflect.Chan, reflect.Map, reflect.Slice, reflect.String:
		return item.Len(), nil
	case reflect.Invalid:
		return 0, errors.New("len of untyped nil")
	}
	return 0, fmt.Errorf("len of type %s", item.Type())
}

func index(item reflect.Value, indexes ...reflect.Value) (reflect.Value, error) {
	item = indirectInterface(item)
	if !item.IsValid() {
		return reflect.Value{}, errors.New("index of untyped nil")
	}
	for _, ix := range indexes {
		ix = indirectInterface(ix)
		var isNil bool
		if item, isNil = indirect(item); isNil {
			return reflect.Value{}, errors.New("index of nil pointer")
		}
		switch item.Kind() {
		case reflect.Array, reflect.Slice, reflect.String:
			i, err := indexArg(ix, item.Len())
			if err != nil {
				return reflect.Value{}, err
			}
			if i == item.Len() {
				return reflect.Value{}, fmt.Errorf("index out of range: %d", i)
			}
			item = item.Index(i)
		case reflect.Map:
			key, err := prepareArg(ix, item.Type().Key())
			if err != nil {
				return reflect.Value{}, err
			}
			if v := item.MapIndex(key); v.IsValid() {
				item = v
			} else {
				item = reflect.Zero(item.Type().Elem())
			}
		default:
			return reflect.Value{}, fmt.Errorf("can't index item of type %s", item.Type())
		}
	}
	return item, nil
}

// indexArg is an integer index in [0, limit].
func indexArg(ix reflect.Value, limit int) (int, error) {
	var x int64
	switch ix.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		x = ix.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		x = int64(ix.Uint())
	case reflect.Invalid:
		return 0, errors.New("cannot index slice/array with nil")
	default:
		return 0, fmt.Errorf("cannot index slice/array with type %s", ix.Type())
	}
	if x < 0 || int(x) < 0 || int(x) > limit {
		return 0, fmt.Errorf("index out of range: %d", x)
	}
	return int(x), nil
}

// prepareArg fits v to type t for a map key or a call's argument.
func prepareArg(v reflect.Value, t reflect.Type) (reflect.Value, error) {
	if !v.IsValid() {
		if !canBeNil(t) {
			return reflect.Value{}, fmt.Errorf("value is nil; should be of type %s", t)
		}
		return reflect.Zero(t), nil
	}
	if v.Type().AssignableTo(t) {
		return v, nil
	}
	if intLike(v.Kind()) && intLike(t.Kind()) && v.Type().ConvertibleTo(t) {
		return v.Convert(t), nil
	}
	return reflect.Value{}, fmt.Errorf("value has type %s; should be %s", v.Type(), t)
}

func intLike(k reflect.Kind) bool {
	switch k {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return true
	}
	return false
}

func slice(item reflect.Value, indexes ...reflect.Value) (reflect.Value, error) {
	item = indirectInterface(item)
	if !item.IsValid() {
		return reflect.Value{}, errors.New("slice of untyped nil")
	}
	if len(indexes) > 3 {
		return reflect.Value{}, fmt.Errorf("too many slice indexes: %d", len(indexes))
	}
	var limit int
	switch item.Kind() {
	case reflect.String:
		if len(indexes) == 3 {
			return reflect.Value{}, errors.New("cannot 3-index slice a string")
		}
		limit = item.Len()
	case reflect.Array, reflect.Slice:
		limit = item.Cap()
	default:
		return reflect.Value{}, fmt.Errorf("can't slice item of type %s", item.Type())
	}
	bounds := [3]int{0, item.Len()}
	for i, ix := range indexes {
		x, err := indexArg(ix, limit)
		if err != nil {
			return reflect.Value{}, err
		}
		bounds[i] = x
	}
	if bounds[0] > bounds[1] {
		return reflect.Value{}, fmt.Errorf("invalid slice index: %d > %d", bounds[0], bounds[1])
	}
	if len(indexes) < 3 {
		return item.Slice(bounds[0], bounds[1]), nil
	}
	if bounds[1] > bounds[2] {
		return reflect.Value{}, fmt.Errorf("invalid slice index: %d > %d", bounds[1], bounds[2])
	}
	return item.Slice3(bounds[0], bounds[1], bounds[2]), nil
}

// call calls a function value found in the data; evalCall runs it as
// callNamed, so that errors name what was called.
func call(fn reflect.Value, args ...reflect.Value) (reflect.Value, error) {
	return callNamed("function", fn, args...)
}

func callNamed(callee string, fn reflect.Value, args ...reflect.Value) (reflect.Value, error) {
	fn = indirectInterface(fn)
	if !fn.IsValid() {
		return reflect.Value{}, errors.New("call of nil")
	}
	t := fn.Type()
	if t.Kind() != reflect.Func {
		return reflect.Value{}, fmt.Errorf("non-function %s of type %s", callee, t)
	}
	if !goodResults(t) {
		return reflect.Value{}, fmt.Errorf("function called with %d args; should be 1 or 2", t.NumOut())
	}
	numIn := t.NumIn()
	var variadicType reflect.Type
	if t.IsVariadic() {
		if len(args) < numIn-1 {
			return reflect.Value{}, fmt.Errorf("wrong number of args for %s: got %d want at least %d", callee, len(args), numIn-1)
		}
		variadicType = t.In(numIn - 1).Elem()
	} else if len(args) != numIn {
		return reflect.Value{}, fmt.Errorf("wrong number of args for %s: got %d want %d", callee, len(args), numIn)
	}
	argv := make([]reflect.Value, len(args))
	for i, arg := range args {
		want := variadicType
		if !t.IsVariadic() || i < numIn-1 {
			want = t.In(i)
		}
		var err error
		if argv[i], err = prepareArg(indirectInterface(arg), want); err != nil {
			return reflect.Value{}, fmt.Errorf("arg %d: %w", i, err)
		}
	}
	return safeCall(fn, argv)
}

// argsText is the text html, js and urlquery escape: one string as it
// is, anything else as print would write it.
func argsText(args []any) string {
	if len(args) == 1 {
		if s, ok := args[0].(string); ok {
			return s
		}
	}
	for i, a := range args {
		if p, ok := printableValue(reflect.ValueOf(a)); ok {
			args[i] = p
		}
	}
	return fmt.Sprint(args...)
}

var htmlReplacer = strings.NewReplacer("\000", "\uFFFD", `"`, "&#34;", "'", "&#39;", "&", "&amp;", "<", "&lt;", ">", "&gt;")

func htmlEscape(s string) string { return htmlReplacer.Replace(s) }

// jsEscape makes s safe inside a JavaScript string literal.
func jsEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteByte(s[i]) // not UTF-8: kept as it is
			i++
			continue
		}
		i += size
		switch r {
		case '\\':
			b.WriteString(`\\`)
		case '\'':
			b.WriteString(`\'`)
		case '"':
			b.WriteString(`\"`)
		case '<':
			b.WriteString(`\u003C`)
		case '>':
			b.WriteString(`\u003E`)
		case '&':
			b.WriteString(`\u0026`)
		case '=':
			b.WriteString(`\u003D`)
		default:
			if r < ' ' || (r >= utf8.RuneSelf && !unicode.IsPrint(r)) {
				fmt.Fprintf(&b, `\u%04X`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	return b.String()
}
