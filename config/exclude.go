package config

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"regexp/syntax"
	"strings"
)

// Exclude drops a rule's findings that are known noise: a batch job's pods,
// a service mesh's sidecar, a sandbox namespace, a log line that says the
// crash is expected. Every field given is one more way to be excluded (a
// finding matching any of them is dropped); an excluded finding opens no
// incident and is counted in herald_findings_excluded_total{rule,by}.
//
// The label selector and the when expression are compiled with the rule
// (internal/rules), as a rule's own labels and condition are, and report
// their errors there with the same file:line:col.
type Exclude struct {
	// Names are globs on the object's name and on its owning workload's
	// name (a Deployment's, through its ReplicaSet).
	Names []string `yaml:"names"`
	// Containers are globs on the container a finding is about.
	Containers []string `yaml:"containers"`
	// Namespaces are globs on the object's namespace.
	Namespaces []string `yaml:"namespaces"`
	// Labels is a label selector on the object (kubectl -l syntax).
	Labels string `yaml:"labels"`
	// LogPattern is an RE2 regular expression matched against the text a
	// finding carries about the crash (termination message, waiting or
	// condition message, Event note), after redaction.
	LogPattern string `yaml:"logPattern"`
	// When is a CEL expression over object (and now), like a rule's
	// condition; true excludes the object's findings.
	When string `yaml:"when"`
}

// validateExclude checks the globs and the regular expression of a rule's
// exclude block at p (rules[i].exclude).
func (c *Config) validateExclude(p string, e *Exclude) Errors {
	if e == nil {
		return nil
	}
	var errs Errors
	if len(e.Names)+len(e.Containers)+len(e.Namespaces) == 0 && e.Labels == "" && e.LogPattern == "" && e.When == "" {
		errs = append(errs, c.ErrorAt(p, "an empty exclude excludes nothing: give names, containers, namespaces, labels, logPattern or when (or remove it)"))
	}
	for field, globs := range map[string][]string{"names": e.Names, "containers": e.Containers, "namespaces": e.Namespaces} {
		for i, g := range globs {
			gp := fmt.Sprintf("%s.%s[%d]", p, field, i)
			if err := checkGlob(g); err != "" {
				errs = append(errs, c.ErrorAt(gp, "bad pattern %q: %s", g, err))
			}
		}
	}
	if e.LogPattern != "" {
		if _, err := regexp.Compile(e.LogPattern); err != nil {
			errs = append(errs, c.regexpError(p+".logPattern", e.LogPattern, err))
		}
	}
	return errs
}

// checkGlob says what is wrong with a glob ("" if nothing). Globs are
// path.Match patterns, as the rule's namespaces are.
func checkGlob(g string) string {
	if strings.TrimSpace(g) == "" {
		return "a pattern must not be empty (use \"*\" for any)"
	}
	if _, err := path.Match(g, ""); err != nil {
		return "unclosed [ ] or a trailing \\ (globs take *, ?, [a-z] and \\ to escape)"
	}
	return ""
}

// regexpError places a regexp syntax error on the offending part of the
// pattern in the file, where the parser names it.
func (c *Config) regexpError(p, pattern string, err error) *Error {
	var se *syntax.Error
	if errors.As(err, &se) {
		msg := fmt.Sprintf("bad regular expression: %s", se.Code)
		if se.Expr != "" {
			msg += fmt.Sprintf(" in %q", se.Expr)
		}
		if i := strings.Index(pattern, se.Expr); se.Expr != "" && i >= 0 && !strings.Contains(pattern[:i], "\n") {
			// Escapes in a double-quoted value shift the text; place
			// the error inside the value only where the file shows it.
			if e := c.ErrorInValue(p, 1, i, "%s", msg); e.Line >= 1 && e.Line <= len(c.lines) &&
				e.Col >= 1 && strings.HasPrefix(c.lines[e.Line-1][min(e.Col-1, len(c.lines[e.Line-1])):], se.Expr) {
				return e
			}
		}
		return c.ErrorAt(p, "%s", msg)
	}
	return c.ErrorAt(p, "bad regular expression: %v", err)
}
