package config

import (
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Pos is a 1-based line and column in the configuration file.
type Pos struct {
	Line, Col int
	style     yaml.Style // of a scalar, to place errors inside it
}

// positions maps a path ("rules[0].sinks[1]") to where its value starts.
type positions map[string]Pos

// nearest returns the position of path, or of its closest recorded parent.
func (p positions) nearest(path string) Pos {
	for {
		if pos, ok := p[path]; ok {
			return pos
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			break
		}
		path = path[:i]
	}
	if pos, ok := p[""]; ok {
		return pos
	}
	return Pos{Line: 1, Col: 1}
}

var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// syntaxErrorLine finds the line a YAML syntax error is on when yaml.v3
// names the line its enclosing block began on (a mis-indented key deep in
// a rule is "line 1: did not find expected '-' indicator"): the first
// line from that one on whose prefix of the file fails with the same
// message, and the column its text starts at. Only run on a file that
// failed to parse.
func syntaxErrorLine(data []byte, msg string, from int) (line, col int, ok bool) {
	lines := strings.SplitAfter(string(data), "\n")
	if len(lines) > 2000 || len(data) > 256<<10 || from < 1 || from > len(lines) {
		return 0, 0, false // a configuration this long: keep yaml.v3's line (a parse per line)
	}
	var prefix strings.Builder
	for _, l := range lines[:from-1] {
		prefix.WriteString(l) // the error is not before yaml.v3's line
	}
	for i := from - 1; i < len(lines); i++ {
		l := lines[i]
		prefix.WriteString(l)
		var node yaml.Node
		err := yaml.Unmarshal([]byte(prefix.String()), &node)
		if err == nil {
			continue
		}
		if m := yamlLineRE.FindStringSubmatch(err.Error()); m == nil || m[2] != msg {
			continue // the cut itself broke something (a quoted string, a block)
		}
		return i + 1, len(l) - len(strings.TrimLeft(l, " ")) + 1, true
	}
	return 0, 0, false
}

// indentHint says what the usual cause of yaml.v3's indentation errors is.
func indentHint(msg string) string {
	switch msg {
	case "did not find expected '-' indicator", "did not find expected key":
		return " (check this line's indentation: a key lines up with the keys beside it, two spaces deeper than its parent)"
	case "mapping values are not allowed in this context":
		return " (check this line's indentation, or quote a value that holds \": \", e.g. title: \"Crash: {{ .Name }}\")"
	}
	return ""
}

// decodeDocument parses data as one YAML document and decodes it into out
// field by field, rejecting unknown keys and recording every position.
// yaml.v3's own strict mode stops at the first problem and reports no
// column, which is why the walk is done here.
func decodeDocument(file string, data []byte, out any, pos positions, errs *Errors) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		line, msg := 1, err.Error()
		if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
			line, _ = strconv.Atoi(m[1])
			msg = m[2]
		}
		col := 1
		if m := yamlLineRE.FindStringSubmatch(err.Error()); m != nil {
			if l, c, ok := syntaxErrorLine(data, msg, line); ok {
				line, col = l, c
			}
		}
		*errs = append(*errs, &Error{File: file, Line: line, Col: col, Msg: "YAML syntax error: " + msg + indentHint(msg)})
		return
	}
	if len(root.Content) == 0 {
		*errs = append(*errs, &Error{File: file, Line: 1, Col: 1, Msg: "the file is empty: it needs at least rules and sinks (see examples/)"})
		return
	}
	d := &decoder{file: file, pos: pos, errs: errs}
	d.decode(root.Content[0], reflect.ValueOf(out).Elem(), "")
}

type decoder struct {
	file string
	pos  positions
	errs *Errors
}

func (d *decoder) fail(n *yaml.Node, path, format string, args ...any) {
	*d.errs = append(*d.errs, &Error{File: d.file, Line: n.Line, Col: n.Column, Path: path, Msg: fmt.Sprintf(format, args...)})
}

var durationType = reflect.TypeFor[time.Duration]()

func (d *decoder) decode(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	d.pos[path] = Pos{Line: n.Line, Col: n.Column, style: n.Style}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return // an empty value leaves the default
	}
	switch {
	case v.Type() == durationType:
		d.decodeDuration(n, v, path)
		return
	case v.Kind() == reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		d.decode(n, v.Elem(), path)
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		d.decodeStruct(n, v, path)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			d.fail(n, path, "expected a list, got %s", describe(n))
			return
		}
		v.Set(reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content)))
		for i, item := range n.Content {
			d.decode(item, v.Index(i), fmt.Sprintf("%s[%d]", path, i))
		}
	case reflect.Map:
		d.decodeMap(n, v, path)
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			d.fail(n, path, "expected a string, got %s", describe(n))
			return
		}
		v.SetString(n.Value)
	case reflect.Int:
		var i int
		if n.Kind != yaml.ScalarNode || n.Tag != "!!int" || n.Decode(&i) != nil {
			d.fail(n, path, "expected an integer, got %s", describe(n))
			return
		}
		v.SetInt(int64(i))
	case reflect.Float64:
		var f float64
		if n.Kind != yaml.ScalarNode || (n.Tag != "!!float" && n.Tag != "!!int") || n.Decode(&f) != nil {
			d.fail(n, path, "expected a number, got %s", describe(n))
			return
		}
		v.SetFloat(f)
	case reflect.Bool:
		var b bool
		if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" || n.Decode(&b) != nil {
			d.fail(n, path, "expected true or false, got %s", describe(n))
			return
		}
		v.SetBool(b)
	default:
		panic(fmt.Sprintf("config: no decoder for %s at %s", v.Type(), path))
	}
}

func (d *decoder) decodeDuration(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.ScalarNode {
		d.fail(n, path, "expected a duration such as 30s or 5m, got %s", describe(n))
		return
	}
	dur, err := time.ParseDuration(n.Value)
	if err != nil || dur < 0 {
		d.fail(n, path, "invalid duration %q: use a positive number with a unit, such as 30s or 5m", n.Value)
		return
	}
	v.SetInt(int64(dur))
}

func (d *decoder) decodeStruct(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		d.fail(n, path, "expected a mapping, got %s", describe(n))
		return
	}
	fields := map[string]int{}
	var names []string
	for i := range v.NumField() {
		tag := v.Type().Field(i).Tag.Get("yaml")
		if tag == "" || tag == "-" {
			continue
		}
		fields[tag] = i
		names = append(names, tag)
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i], n.Content[i+1]
		sub := join(path, key.Value)
		idx, ok := fields[key.Value]
		if !ok {
			if near := closest(key.Value, names); near != "" {
				d.fail(key, sub, "unknown field %q; did you mean %q?", key.Value, near)
			} else {
				d.fail(key, sub, "unknown field %q; valid fields here: %s", key.Value, strings.Join(names, ", "))
			}
			continue
		}
		if seen[key.Value] {
			d.fail(key, sub, "field %q is set twice", key.Value)
			continue
		}
		seen[key.Value] = true
		d.decode(val, v.Field(idx), sub)
	}
}

func (d *decoder) decodeMap(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		d.fail(n, path, "expected a mapping, got %s", describe(n))
		return
	}
	m := reflect.MakeMapWithSize(v.Type(), len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i], n.Content[i+1]
		sub := join(path, key.Value)
		if m.MapIndex(reflect.ValueOf(key.Value)).IsValid() {
			d.fail(key, sub, "key %q is set twice", key.Value)
			continue
		}
		elem := reflect.New(v.Type().Elem()).Elem()
		d.decode(val, elem, sub)
		m.SetMapIndex(reflect.ValueOf(key.Value), elem)
	}
	v.Set(m)
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// describe names what the user wrote, for "expected X, got Y" messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	kinds := map[string]string{"!!int": "integer", "!!bool": "boolean", "!!float": "number", "!!str": "string"}
	if k, ok := kinds[n.Tag]; ok {
		return fmt.Sprintf("%s %q", k, n.Value)
	}
	return strconv.Quote(n.Value)
}

// closest returns the candidate within two edits of s, if there is one:
// most unknown keys are typos of a known one.
func closest(s string, candidates []string) string {
	best, bestDist := "", 3
	for _, c := range candidates {
		if d := editDistance(strings.ToLower(s), strings.ToLower(c)); d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
