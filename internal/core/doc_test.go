package core

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// docPath matches a file named in a comment: a Go or Lua file, bare (in
// this package) or with its directory (from the repository's root).
var docPath = regexp.MustCompile(`\b[a-z0-9_]+(?:/[a-z0-9_]+)*\.(?:go|lua)\b`)

// TestDocNamesFilesThatExist: every file the package comment (doc.go: the
// tour and the glossary) names exists, in this package or from the
// repository's root, so that the tour cannot point at files that moved.
func TestDocNamesFilesThatExist(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "doc.go", nil, parser.PackageClauseOnly|parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	doc := f.Doc.Text()
	paths := docPath.FindAllString(doc, -1)
	if len(paths) < 10 {
		t.Fatalf("doc.go names %d files; the tour alone names more", len(paths))
	}
	root := filepath.Join("..", "..")
	for _, p := range paths {
		if _, err := os.Stat(p); err == nil {
			continue
		}
		if _, err := os.Stat(filepath.Join(root, p)); err == nil {
			continue
		}
		t.Errorf("doc.go names %s, which is neither in internal/core nor at the repository's root", p)
	}
	for _, term := range []string{"hold", "fresh hold", "side", "request", "line", "handoff", "chain", "undo"} {
		if !strings.Contains(doc, "  - "+term+": ") {
			t.Errorf("the glossary lacks %q", term)
		}
	}
	if n := strings.Count(doc[strings.Index(doc, "Glossary"):], "\n  - "); n > 8 {
		t.Errorf("the glossary has %d entries, at most 8", n)
	}
}
