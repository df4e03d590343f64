package node

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// ErrConfig marks every configuration error; test with errors.Is.
var ErrConfig = errors.New("node: invalid configuration")

// ConfigError is one invalid field of a configuration file.
type ConfigError struct {
	File  string // the file, as given to the loader; empty for a config built in code
	Line  int    // 1-based line of the field (or of its parent when the field is absent); 0 if unknown
	Field string // YAML path, such as orgs[1].peers[0].address
	Value string // the offending value, quoted when it is a string
	Want  string // what is allowed
}

func (e *ConfigError) Error() string {
	var b strings.Builder
	b.WriteString("node: ")
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			b.WriteString(":" + strconv.Itoa(e.Line))
		}
		b.WriteString(": ")
	}
	fmt.Fprintf(&b, "%s = %s: want %s", e.Field, e.Value, e.Want)
	return b.String()
}

// Unwrap lets errors.Is(err, ErrConfig) match.
func (e *ConfigError) Unwrap() error { return ErrConfig }

// fileError is an error of a whole file, or one the YAML decoder found.
type fileError struct{ msg string }

func (e *fileError) Error() string { return e.msg }
func (e *fileError) Unwrap() error { return ErrConfig }

// fileErrorf returns an error wrapping ErrConfig that starts "node: <file>: ".
func fileErrorf(file, format string, args ...any) error {
	return &fileError{msg: "node: " + file + ": " + fmt.Sprintf(format, args...)}
}

// maxErrors bounds the errors one Validate reports.
const maxErrors = 20

// checker collects the invalid fields of one file.
type checker struct {
	file string
	root *yaml.Node // nil for a config built in code
	errs []error
}

// bad records that field holds value, which is not what want describes.
// Strings are quoted; other values are printed with %v.
func (c *checker) bad(field string, value any, want string) {
	if len(c.errs) == maxErrors {
		c.errs = append(c.errs, fileErrorf(c.file, "more errors not shown"))
	}
	if len(c.errs) > maxErrors {
		return
	}
	v := fmt.Sprintf("%v", value)
	if s, ok := value.(string); ok {
		v = strconv.Quote(s)
	}
	c.errs = append(c.errs, &ConfigError{File: c.file, Line: lineOf(c.root, field), Field: field, Value: v, Want: want})
}

func (c *checker) err() error { return errors.Join(c.errs...) }

// ReadYAML decodes the YAML file path strictly into out, which must point
// to a struct: an unknown field is an error naming the file, the line, the
// field and the fields allowed there. Errors wrap ErrConfig.
func ReadYAML(path string, out any) error {
	_, err := readYAML(path, out)
	return err
}

// readYAML reads path and decodes it strictly into out, which must point to
// a struct. It returns the document's node tree, for the lines of later
// errors.
func readYAML(path string, out any) (*yaml.Node, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("node: read configuration: %w", err)
	}
	// The node tree first: a type error names its field from it.
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, fileErrorf(path, "%s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(out); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fileErrorf(path, "file is empty, want a YAML mapping (see docs/config.md)")
		}
		return nil, fileErrorf(path, "%s", explainYAML(err, reflect.TypeOf(out).Elem(), &root))
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, fileErrorf(path, "more than one YAML document, want exactly one")
	}
	return &root, nil
}

var (
	unknownField = regexp.MustCompile(`^line (\d+): field (\S+) not found in type (\S+)$`)
	wrongType    = regexp.MustCompile("^line (\\d+): cannot unmarshal (!!\\w+)(?: `(.*)`)? into (\\S+)$")
)

// explainYAML rewrites the decoder's errors: an unknown field is listed with
// the fields allowed in its place; a value of the wrong type is named by
// its field path in root, with the value and the type wanted.
func explainYAML(err error, top reflect.Type, root *yaml.Node) string {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return strings.TrimPrefix(err.Error(), "yaml: ")
	}
	msgs := make([]string, 0, len(te.Errors))
	for _, m := range te.Errors {
		if s := unknownField.FindStringSubmatch(m); s != nil {
			if t := findType(top, s[3]); t != nil {
				m = fmt.Sprintf("line %s: unknown field %q, want one of %s", s[1], s[2], strings.Join(yamlFields(t), ", "))
			} else {
				m = fmt.Sprintf("line %s: unknown field %q", s[1], s[2])
			}
		}
		if s := wrongType.FindStringSubmatch(m); s != nil {
			m = explainType(root, s[1], s[2], s[3], s[4])
		}
		msgs = append(msgs, m)
	}
	return strings.Join(msgs, "; ")
}

// explainType says which field on line holds the value of YAML tag tag,
// shown as shown (yaml.v3 cuts long ones to 7 characters and "..."),
// that is not of the Go type goType: `line 17: batch.maxTxs = "lots":
// want a whole number`.
func explainType(root *yaml.Node, line, tag, shown, goType string) string {
	n, _ := strconv.Atoi(line)
	match := func(v *yaml.Node) bool {
		switch tag {
		case "!!seq":
			return v.Kind == yaml.SequenceNode
		case "!!map":
			return v.Kind == yaml.MappingNode
		}
		if cut, ok := strings.CutSuffix(shown, "..."); ok {
			return v.Kind == yaml.ScalarNode && strings.HasPrefix(v.Value, cut)
		}
		return v.Kind == yaml.ScalarNode && v.Value == shown
	}
	path, v := fieldAt(root, n, "", match)
	msg := "line " + line + ": "
	if v == nil {
		return msg + "a value that is not " + wantOf(goType)
	}
	value := v.Value
	switch {
	case v.Kind == yaml.MappingNode:
		value = "a mapping"
	case v.Kind == yaml.SequenceNode:
		value = "a list"
	case v.Tag == "!!str":
		value = strconv.Quote(value)
	}
	return msg + path + " = " + value + ": want " + wantOf(goType)
}

// wantOf describes the values a Go type takes in YAML.
func wantOf(goType string) string {
	switch {
	case goType == "time.Duration":
		return "a duration with a unit such as 2s, 500ms or 1m"
	case strings.HasPrefix(goType, "uint"):
		return "a whole number, 0 or more"
	case strings.HasPrefix(goType, "int"):
		return "a whole number"
	case strings.HasPrefix(goType, "float"):
		return "a number"
	case goType == "bool":
		return "true or false"
	case goType == "string":
		return "a string"
	case strings.HasPrefix(goType, "[]"):
		return "a list"
	case strings.HasPrefix(goType, "map["):
		return "a mapping"
	}
	return "a mapping (" + goType + ")"
}

// fieldAt finds the deepest field whose value starts on line and is what
// match wants: its path (such as orgs[1].peers[0].address) and its value
// node; nil when none is.
func fieldAt(n *yaml.Node, line int, prefix string, match func(*yaml.Node) bool) (string, *yaml.Node) {
	var keys []string
	var vals []*yaml.Node
	switch n.Kind {
	case yaml.DocumentNode:
		vals = n.Content
		keys = make([]string, len(vals))
		for i := range keys {
			keys[i] = prefix
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			p := n.Content[i].Value
			if prefix != "" {
				p = prefix + "." + p
			}
			keys, vals = append(keys, p), append(vals, n.Content[i+1])
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			keys, vals = append(keys, fmt.Sprintf("%s[%d]", prefix, i)), append(vals, c)
		}
	}
	for i, v := range vals { // the deepest match: a flow list holds its items on its line
		if p, dv := fieldAt(v, line, keys[i], match); dv != nil {
			return p, dv
		}
		if v.Line == line && match(v) && n.Kind != yaml.DocumentNode {
			return keys[i], v
		}
	}
	return "", nil
}

// findType finds the struct type named name ("node.OrgConfig") in t or the
// types it contains.
func findType(t reflect.Type, name string) reflect.Type {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	if t.String() == name {
		return t
	}
	for i := 0; i < t.NumField(); i++ {
		if f := t.Field(i); f.IsExported() {
			if r := findType(f.Type, name); r != nil {
				return r
			}
		}
	}
	return nil
}

// yamlFields lists the YAML names of a struct's fields.
func yamlFields(t reflect.Type) []string {
	var names []string
	for i := 0; i < t.NumField(); i++ {
		tag, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if tag != "" && tag != "-" {
			names = append(names, tag)
		}
	}
	return names
}

// lineOf finds the line of a field path such as orgs[1].peers[0].address in
// a document, or of its deepest ancestor present. It returns 0 when root is
// nil.
func lineOf(root *yaml.Node, path string) int {
	if root == nil {
		return 0
	}
	n := root
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := n.Line
	for _, seg := range strings.Split(path, ".") {
		name, rest, _ := strings.Cut(seg, "[")
		if n = mapValue(n, name); n == nil {
			return line
		}
		line = n.Line
		for rest != "" {
			idx, after, _ := strings.Cut(rest, "]")
			i, err := strconv.Atoi(idx)
			if err != nil || n.Kind != yaml.SequenceNode || i < 0 || i >= len(n.Content) {
				return line
			}
			n, line = n.Content[i], n.Content[i].Line
			rest = strings.TrimPrefix(after, "[")
		}
	}
	return line
}

// mapValue returns the value of key in a mapping node, or nil.
func mapValue(n *yaml.Node, key string) *yaml.Node {
	if n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// resolve makes a path from a file in dir absolute. Empty stays empty.
func resolve(dir, p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(dir, p)
}
