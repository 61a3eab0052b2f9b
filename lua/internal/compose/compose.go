// Package compose composes a script of package lua with the preludes it
// uses: both package lua (when it loads a script) and its bindings'
// generator (which records each composed script's digest) compose alike.
package compose

import (
	"regexp"
	"strings"
)

// Composing a script. Lua runs a script's whole text on every call, so
// each `local function` of a prelude makes a closure (and garbage for the
// collector) on every call, used or not: prelude_request alone defines
// eleven, of which lock_acquire_fresh uses three. compose therefore keeps
// of the preludes only the definitions the script uses, directly or
// through another kept definition, in their order.
//
// A prelude is its header (the leading comment lines, dropped) and then
// definitions: each starts at a line "local <name>" or
// "local function <name>" in the first column, together with the comment
// lines just above it, and runs until the next one starts. A definition is
// kept when its name occurs as a word in the script's own text or in a
// kept definition after it (a Lua local is visible only below its
// definition, so nothing refers to a later one). Matching words, comments
// included, may keep a definition that is not needed, never drop one that
// is.

var (
	// definitionLine is a line that starts a prelude's definition.
	definitionLine = regexp.MustCompile(`^local (?:function )?([A-Za-z_][A-Za-z0-9_]*)\b(?:[^,]|$)`)
	// Word is a Lua name.
	Word = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)
)

// Definition is one top-level local of a prelude, with its comment.
type Definition struct {
	// Name is the local's name.
	Name string
	// Text is its definition, with the comment lines above it.
	Text string
}

// Definitions splits a prelude's text into its definitions, in order; its
// header and the blank lines between definitions are left out. A prelude
// that does not have that form (a statement in the first column that is
// neither a definition of one name nor the "end" of one) is a programming
// error caught by every test run.
func Definitions(file, prelude string) []Definition {
	lines := strings.SplitAfter(prelude, "\n")
	var defs []Definition
	start := -1   // first line of the definition being read
	comment := -1 // first line of the comment block above the current line
	header := true
	end := func(to int) {
		if start >= 0 {
			defs[len(defs)-1].Text = strings.TrimRight(strings.Join(lines[start:to], ""), "\n") + "\n"
		}
	}
	for i, line := range lines {
		switch {
		case strings.HasPrefix(line, "--"):
			if !header && comment < 0 {
				comment = i
			}
			continue
		case strings.TrimSpace(line) == "":
			header, comment = false, -1
			continue
		}
		header = false
		m := definitionLine.FindStringSubmatch(line)
		if m == nil {
			if start < 0 || !(strings.HasPrefix(line, " ") || strings.HasPrefix(line, "\t") || strings.TrimSpace(line) == "end") {
				panic("redisync/lua: " + file + ": statement outside a definition: " + line)
			}
			comment = -1
			continue
		}
		from := i
		if comment >= 0 {
			from = comment
		}
		end(from)
		defs = append(defs, Definition{Name: m[1]})
		start, comment = from, -1
	}
	end(len(lines))
	return defs
}

// Compose returns the definitions of the preludes (in order) that own
// uses, then own.
func Compose(preludes map[string]string, order []string, own string) string {
	var defs []Definition
	for _, f := range order {
		defs = append(defs, Definitions(f, preludes[f])...)
	}
	used := map[string]bool{}
	note := func(text string) {
		for _, w := range Word.FindAllString(text, -1) {
			used[w] = true
		}
	}
	note(own)
	keep := make([]bool, len(defs))
	for i := len(defs) - 1; i >= 0; i-- {
		if used[defs[i].Name] {
			keep[i] = true
			note(defs[i].Text)
		}
	}
	var b strings.Builder
	for i, d := range defs {
		if keep[i] {
			b.WriteString(d.Text)
		}
	}
	b.WriteString(own)
	return b.String()
}
