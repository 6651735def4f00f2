package tmpl

import (
	"reflect"
	"time"
)

var timeType = reflect.TypeFor[time.Time]()

// timeMethods are the methods a template may call on a time (herald's
// payload has several: .Time, .Incident.FirstSeen, an event's .LastSeen),
// e.g. {{ .Time.Format "2006-01-02 15:04" }} or {{ .Time.Unix }}. They
// are named here because looking methods up by name is what this package
// avoids (tmpl.go).
var timeMethods = map[string]func(time.Time) any{
	"Format":    func(t time.Time) any { return t.Format },
	"Unix":      func(t time.Time) any { return t.Unix },
	"UnixMilli": func(t time.Time) any { return t.UnixMilli },
	"UTC":       func(t time.Time) any { return t.UTC },
	"Local":     func(t time.Time) any { return t.Local },
	"String":    func(t time.Time) any { return t.String },
	"IsZero":    func(t time.Time) any { return t.IsZero },
	"Year":      func(t time.Time) any { return t.Year },
	"Month":     func(t time.Time) any { return t.Month },
	"Day":       func(t time.Time) any { return t.Day },
	"Hour":      func(t time.Time) any { return t.Hour },
	"Minute":    func(t time.Time) any { return t.Minute },
	"Second":    func(t time.Time) any { return t.Second },
	"Weekday":   func(t time.Time) any { return t.Weekday },
	"YearDay":   func(t time.Time) any { return t.YearDay },
}

// methodOf is receiver's method name bound to receiver, when it is one a
// template may call.
func methodOf(receiver reflect.Value, name string) (reflect.Value, bool) {
	if receiver.Type() != timeType || !receiver.CanInterface() {
		return reflect.Value{}, false
	}
	bind, ok := timeMethods[name]
	if !ok {
		return reflect.Value{}, false
	}
	return reflect.ValueOf(bind(receiver.Interface().(time.Time))), true
}
