package tmpl

import (
	"cmp"
	"errors"
	"fmt"
	"reflect"
	"slices"
)

// The comparison functions: eq, ne, lt, le, gt, ge compare basic values
// (booleans, numbers, strings), integers of either sign with each other;
// eq also compares other comparable values and nils.

type kind int

const (
	otherKind kind = iota
	boolKind
	complexKind
	intKind
	floatKind
	stringKind
	uintKind
)

var (
	errBadComparisonType = errors.New("invalid type for comparison")
	errBadComparison     = errors.New("incompatible types for comparison")
	errNoComparison      = errors.New("missing argument for comparison")
)

func basicKind(v reflect.Value) (kind, error) {
	switch v.Kind() {
	case reflect.Bool:
		return boolKind, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return intKind, nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return uintKind, nil
	case reflect.Float32, reflect.Float64:
		return floatKind, nil
	case reflect.Complex64, reflect.Complex128:
		return complexKind, nil
	case reflect.String:
		return stringKind, nil
	}
	return otherKind, errBadComparisonType
}

// eq is true when a equals any of bs.
func eq(a reflect.Value, bs ...reflect.Value) (bool, error) {
	a = indirectInterface(a)
	if len(bs) == 0 {
		return false, errNoComparison
	}
	ka, _ := basicKind(a)
	for _, b := range bs {
		b = indirectInterface(b)
		kb, _ := basicKind(b)
		equal := false
		switch {
		case ka == intKind && kb == uintKind:
			equal = a.Int() >= 0 && uint64(a.Int()) == b.Uint()
		case ka == uintKind && kb == intKind:
			equal = b.Int() >= 0 && a.Uint() == uint64(b.Int())
		case ka != kb:
			if a.IsValid() && b.IsValid() {
				return false, fmt.Errorf("%w: %s and %s", errBadComparison, a.Type(), b.Type())
			}
		case ka == boolKind:
			equal = a.Bool() == b.Bool()
		case ka == complexKind:
			equal = a.Complex() == b.Complex()
		case ka == floatKind:
			equal = a.Float() == b.Float()
		case ka == intKind:
			equal = a.Int() == b.Int()
		case ka == stringKind:
			equal = a.String() == b.String()
		case ka == uintKind:
			equal = a.Uint() == b.Uint()
		default:
			var err error
			if equal, err = eqOther(a, b); err != nil {
				return false, err
			}
		}
		if equal {
			return true, nil
		}
	}
	return false, nil
}

// eqOther compares values that are not basic: nothing and nils by
// nil-ness, values of one kind with == when their type allows it.
func eqOther(a, b reflect.Value) (bool, error) {
	if a.Kind() != b.Kind() && a.IsValid() && b.IsValid() {
		return false, fmt.Errorf("non-comparable types %s: %v, %s: %v", a, a.Type(), b.Type(), b)
	}
	if isNil(a) || isNil(b) {
		return isNil(a) == isNil(b), nil
	}
	if !a.Type().Comparable() || !b.Type().Comparable() {
		return false, fmt.Errorf("non-comparable type %s: %v", b, b.Type())
	}
	return a.Interface() == b.Interface(), nil
}

// isNil: no value, or a nil pointer, map, slice, func, channel or
// interface.
func isNil(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Invalid:
		return true
	case reflect.Chan, reflect.Func, reflect.Interface, reflect.Map, reflect.Pointer, reflect.Slice:
		return v.IsNil()
	}
	return false
}

func lt(a, b reflect.Value) (bool, error) {
	a, b = indirectInterface(a), indirectInterface(b)
	ka, err := basicKind(a)
	if err != nil {
		return false, err
	}
	kb, err := basicKind(b)
	if err != nil {
		return false, err
	}
	switch {
	case ka == intKind && kb == uintKind:
		return a.Int() < 0 || uint64(a.Int()) < b.Uint(), nil
	case ka == uintKind && kb == intKind:
		return b.Int() >= 0 && a.Uint() < uint64(b.Int()), nil
	case ka != kb:
		return false, fmt.Errorf("%w: %s and %s", errBadComparison, a.Type(), b.Type())
	}
	switch ka {
	case floatKind:
		return a.Float() < b.Float(), nil
	case intKind:
		return a.Int() < b.Int(), nil
	case stringKind:
		return a.String() < b.String(), nil
	case uintKind:
		return a.Uint() < b.Uint(), nil
	}
	return false, errBadComparisonType // booleans and complex numbers have no order
}

func lessOrEqual(a, b reflect.Value) (bool, error) {
	if l, err := lt(a, b); l || err != nil {
		return l, err
	}
	return eq(a, b)
}

// sortedKeys orders a map's keys the way {{range}} visits them: numbers
// and strings by value, anything else by its printed form.
func sortedKeys(m reflect.Value) []reflect.Value {
	keys := m.MapKeys()
	slices.SortFunc(keys, compareKeys)
	return keys
}

func compareKeys(a, b reflect.Value) int {
	if a.Kind() == reflect.Interface {
		a, b = a.Elem(), b.Elem()
	}
	if a.Kind() == b.Kind() {
		switch a.Kind() {
		case reflect.String:
			return cmp.Compare(a.String(), b.String())
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			return cmp.Compare(a.Int(), b.Int())
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
			return cmp.Compare(a.Uint(), b.Uint())
		case reflect.Float32, reflect.Float64:
			return cmp.Compare(a.Float(), b.Float())
		case reflect.Bool:
			return cmp.Compare(btoi(a.Bool()), btoi(b.Bool()))
		}
	}
	return cmp.Compare(fmt.Sprint(a), fmt.Sprint(b))
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
