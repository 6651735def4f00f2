package rules

import (
	"fmt"
	"time"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/ext"
)

// CostLimit bounds the work one condition may do on one object, so a slow
// expression (a comprehension over a huge list) fails instead of stalling
// a worker. Each unit is roughly one step of the evaluator.
const CostLimit = 1_000_000

// celEnv declares what a condition can read: the object as JSON-shaped
// data, and now (the evaluation time).
type celEnv struct{ env *cel.Env }

func newCELEnv() (*celEnv, error) {
	env, err := cel.NewEnv(
		cel.Variable("object", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("now", cel.TimestampType),
		ext.Strings(),
	)
	if err != nil {
		return nil, fmt.Errorf("CEL environment: %w", err)
	}
	return &celEnv{env: env}, nil
}

// celIssue is a compile error at a 1-based line and 0-based column of the
// expression.
type celIssue struct {
	line, col int
	msg       string
}

type condition struct {
	program cel.Program
	source  string // what annotations it reads (annotations.go)
}

// compile parses and type-checks expr; it must yield a bool.
func (e *celEnv) compile(expr string) (*condition, []celIssue) {
	ast, iss := e.env.Compile(expr)
	if iss != nil && iss.Err() != nil {
		var out []celIssue
		for _, ce := range iss.Errors() {
			out = append(out, celIssue{line: max(ce.Location.Line(), 1), col: max(ce.Location.Column(), 0), msg: "CEL: " + ce.Message})
		}
		return nil, out
	}
	if t := ast.OutputType(); !t.IsExactType(cel.BoolType) && !t.IsExactType(cel.DynType) {
		return nil, []celIssue{{line: 1, col: 0, msg: fmt.Sprintf("CEL: the condition must be true or false, but it yields %s", t)}}
	}
	prg, err := e.env.Program(ast, cel.CostLimit(CostLimit))
	if err != nil {
		return nil, []celIssue{{line: 1, col: 0, msg: "CEL: " + err.Error()}}
	}
	return &condition{program: prg, source: expr}, nil
}

// sampleYield evaluates the condition on a bare object of kind (its
// metadata and empty spec and status) and says what it yields when that
// is not true or false: the object is untyped to CEL, so a condition
// such as object.metadata.name type-checks and fails only on every
// object, at run time. An evaluation error (a missing field) says
// nothing: real objects have the fields a bare one lacks.
func (c *condition) sampleYield(kind string) (string, bool) {
	obj := map[string]any{"kind": kind, "metadata": map[string]any{"name": "sample", "namespace": "sample",
		"labels": map[string]any{}, "annotations": map[string]any{}}, "spec": map[string]any{}, "status": map[string]any{}}
	out, _, err := c.program.Eval(map[string]any{"object": obj, "now": time.Now()})
	if err != nil {
		return "", false
	}
	if _, ok := out.Value().(bool); ok {
		return "", false
	}
	return out.Type().TypeName(), true
}

// eval runs the condition on one object.
func (c *condition) eval(obj map[string]any, now time.Time) (bool, error) {
	out, _, err := c.program.Eval(map[string]any{"object": obj, "now": now})
	if err != nil {
		return false, fmt.Errorf("CEL: %w", err)
	}
	b, ok := out.Value().(bool)
	if !ok {
		return false, fmt.Errorf("CEL: the condition yielded %v (%s), not true or false", out.Value(), out.Type())
	}
	return b, nil
}
