package main

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// The docs runner's reading of Markdown: fenced code blocks, the
// directives before them, and the commands in them. The runner itself is
// docs_test.go.

// docBlock is a fenced code block of a Markdown file.
type docBlock struct {
	file string
	line int    // the opening fence's line, from 1
	lang string // the fence's info string: sh, console, yaml, ...
	// directives are the `<!-- docs: ... -->` comments on the lines right
	// above the fence, in order, without the comment markers.
	directives []string
	body       []string
}

func (b docBlock) String() string { return fmt.Sprintf("%s:%d", b.file, b.line) }

// directive reports whether the block has a directive named name, and
// its argument (the text after "name:" or after "name ").
func (b docBlock) directive(name string) (string, bool) {
	for _, d := range b.directives {
		if d == name {
			return "", true
		}
		if rest, ok := strings.CutPrefix(d, name+":"); ok {
			return strings.TrimSpace(rest), true
		}
		if rest, ok := strings.CutPrefix(d, name+" "); ok {
			return strings.TrimSpace(rest), true
		}
	}
	return "", false
}

// all returns every argument of the directives named name.
func (b docBlock) all(name string) []string {
	var out []string
	for _, d := range b.directives {
		if rest, ok := strings.CutPrefix(d, name+":"); ok {
			out = append(out, strings.TrimSpace(rest))
		}
	}
	return out
}

var directiveLine = regexp.MustCompile(`^<!-- docs: (.*) -->$`)

// readDocBlocks returns the fenced code blocks of a Markdown file.
func readDocBlocks(path string) ([]docBlock, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var (
		blocks  []docBlock
		cur     *docBlock
		pending []string // directives seen since the last other line
		n       int
	)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		n++
		line := sc.Text()
		if cur != nil {
			if strings.HasPrefix(line, "```") {
				blocks = append(blocks, *cur)
				cur = nil
				continue
			}
			cur.body = append(cur.body, line)
			continue
		}
		if lang, ok := strings.CutPrefix(line, "```"); ok {
			cur = &docBlock{file: path, line: n, lang: strings.TrimSpace(lang), directives: pending}
			pending = nil
			continue
		}
		if m := directiveLine.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
			pending = append(pending, strings.TrimSpace(m[1]))
			continue
		}
		pending = nil
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if cur != nil {
		return nil, fmt.Errorf("%s:%d: code block never closed", path, cur.line)
	}
	return blocks, nil
}

// docCommand is a command of a block with the output the doc shows for
// it (console blocks) or none (sh blocks).
type docCommand struct {
	line   int // in the file
	text   string
	output []string
}

// commands returns a block's commands: a console block's `$ ` lines
// with the lines after each, an sh block's lines (a trailing backslash
// continues one). Other blocks have none.
func (b docBlock) commands() []docCommand {
	var out []docCommand
	switch b.lang {
	case "console":
		for i := 0; i < len(b.body); i++ {
			text, ok := strings.CutPrefix(b.body[i], "$ ")
			if !ok {
				if len(out) > 0 {
					out[len(out)-1].output = append(out[len(out)-1].output, b.body[i])
				}
				continue
			}
			c := docCommand{line: b.line + 1 + i}
			for strings.HasSuffix(text, `\`) && i+1 < len(b.body) {
				i++
				text = strings.TrimSuffix(text, `\`) + " " + strings.TrimSpace(b.body[i])
			}
			c.text = text
			out = append(out, c)
		}
	case "sh":
		for i := 0; i < len(b.body); i++ {
			c := docCommand{line: b.line + 1 + i, text: b.body[i]}
			for strings.HasSuffix(c.text, `\`) && i+1 < len(b.body) {
				i++
				c.text = strings.TrimSuffix(c.text, `\`) + " " + strings.TrimSpace(b.body[i])
			}
			if strings.TrimSpace(c.text) != "" {
				out = append(out, c)
			}
		}
	}
	return out
}

// shellWords splits a shell command line into simple commands (at ;, &,
// &&, ||, |) of words: quotes are removed, a $(...) stays one word, and
// an unquoted # starts a comment.
func shellWords(line string) [][]string {
	var (
		cmds  [][]string
		words []string
		w     strings.Builder
		inW   bool
	)
	endWord := func() {
		if inW {
			words = append(words, w.String())
			w.Reset()
			inW = false
		}
	}
	endCmd := func() {
		endWord()
		if len(words) > 0 {
			cmds = append(cmds, words)
			words = nil
		}
	}
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == '\'':
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				j = len(line) - i - 1
			}
			w.WriteString(line[i+1 : i+1+j])
			inW, i = true, i+1+j
		case c == '"':
			j := i + 1
			for j < len(line) && line[j] != '"' {
				if line[j] == '\\' && j+1 < len(line) {
					j++
				}
				w.WriteByte(line[j])
				j++
			}
			inW, i = true, j
		case c == '$' && i+1 < len(line) && line[i+1] == '(':
			depth, j := 0, i+1
			for ; j < len(line); j++ {
				if line[j] == '(' {
					depth++
				} else if line[j] == ')' {
					if depth--; depth == 0 {
						break
					}
				}
			}
			w.WriteString(line[i:min(j+1, len(line))])
			inW, i = true, j
		case c == '\\' && i+1 < len(line):
			w.WriteByte(line[i+1])
			inW, i = true, i+1
		case c == '#' && !inW:
			endCmd()
			return cmds
		case c == ';' || c == '&' || c == '|':
			endCmd()
			if i+1 < len(line) && (line[i+1] == '&' || line[i+1] == '|') {
				i++
			}
		case c == ' ' || c == '\t':
			endWord()
		default:
			w.WriteByte(c)
			inW = true
		}
	}
	endCmd()
	return cmds
}

// strandArgs returns the arguments of a simple command that runs strand
// (`strand`, `./strand`, `go run ./cmd/strand`, after any VAR=value
// words), and whether it does.
func strandArgs(words []string) ([]string, bool) {
	for len(words) > 0 && strings.Contains(words[0], "=") && !strings.HasPrefix(words[0], "-") {
		words = words[1:]
	}
	switch {
	case len(words) > 0 && (words[0] == "strand" || words[0] == "./strand"):
		return words[1:], true
	case len(words) > 2 && words[0] == "go" && words[1] == "run" && words[2] == "./cmd/strand":
		return words[3:], true
	}
	return nil, false
}
