package core

import (
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// docPath matches a file named in a comment: a Go or Lua file, bare (in
// this package) or with its directory (from the repository's root).
var docPath = regexp.MustCompile(`\b[a-z0-9_]+(?:/[a-z0-9_]+)*\.(?:go|lua)\b`)

// glossaryTerms are the terms the tour needs: the glossary defines each.
var glossaryTerms = []string{
	"hold", "owner", "fresh hold", "owner's lock", "gate", "side", "request",
	"request key", "deadline", "acquisition", "attempt", "wait", "cut",
	"line", "turn", "head", "subscription passed on", "held here",
	"handoff", "Handoff", "releaser", "chain", "undo", "settle",
	"pipeline",
}

// TestDocNamesFilesThatExist: every file the package comment (doc.go: the
// tour and the glossary) names exists, in this package or from the
// repository's root, so that the tour cannot point at files that moved;
// and the glossary defines every term of glossaryTerms.
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
	for _, term := range glossaryTerms {
		if !strings.Contains(doc, "  - "+term+": ") {
			t.Errorf("the glossary lacks %q", term)
		}
	}
}

// TestDocReferencesResolve: every doc link in a comment of the
// repository's Go files ([X], [X.Y], [pkg.X], [pkg.X.Y], and the member
// after a link, [X].Y) names a declaration that exists, and so does every
// qualified name in a comment's prose (Type.member, pkg.Name,
// pkg.Type.member) whose first part is a type of the file's package or a
// package of the repository, and every name qualified by a package's path
// (internal/core/pipeline.Pipeline.Runner) whose path is the repository's;
// a package named in prose ("(package request)", "the request package")
// is one of the repository's, the file's imports or the standard
// library's. In the engine (internal/core/...), every name in prose
// written as Go names are (holdEnding, HeldHere) is one too, and a
// one-letter name in a function's doc comment ("after h was acquired")
// is one of the function's parameters, results or receiver. Names of
// other modules' packages (go-redis) are not checked.
func TestDocReferencesResolve(t *testing.T) {
	repo := loadRepo(t, filepath.Join("..", ".."))
	if len(repo.pkgs) < 20 {
		t.Fatalf("found %d packages in the repository; expected more", len(repo.pkgs))
	}
	var stale []string
	for _, p := range repo.sorted() {
		for _, f := range p.files {
			if strings.HasSuffix(f.name, filepath.Join("core", "doc_test.go")) {
				continue // it shows the forms of the links
			}
			stale = append(stale, repo.check(p, f)...)
			stale = append(stale, repo.checkGroups(p, f)...)
		}
	}
	for _, s := range stale {
		t.Errorf("stale reference: %s", s)
	}
	t.Logf("%d packages, %d stale references", len(repo.pkgs), len(stale))
}

// declPkg is what one package (one directory's files, tests included)
// declares: its top-level names, and per type its fields, methods and
// embedded types (for promoted members).
type declPkg struct {
	path    string // import path
	module  string // its module's path
	name    string // package name
	names   map[string]bool
	members map[string]map[string]bool
	embeds  map[string][]string // type → embedded types ("T" or "pkg.T")
	idents  map[string]bool     // every name in the package's code (params and locals too)
	files   []*docFile
}

// docFile is one parsed file with its imports (name → import path).
type docFile struct {
	name    string
	fset    *token.FileSet
	ast     *ast.File
	imports map[string]string
}

// docRepo is every package of the repository's modules, by import path,
// with each package's last path element mapped to its paths.
type docRepo struct {
	pkgs   map[string]*declPkg
	byName map[string][]string
	global map[string]bool // every declared name and member of the library's packages
}

func (r *docRepo) sorted() []*declPkg {
	ps := make([]*declPkg, 0, len(r.pkgs))
	for _, p := range r.pkgs {
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].path < ps[j].path })
	return ps
}

// loadRepo parses every Go file under root (each directory's package is
// named by the nearest go.mod's module path and the directory), skipping
// node_modules and testdata.
func loadRepo(t *testing.T, root string) *docRepo {
	t.Helper()
	r := &docRepo{pkgs: map[string]*declPkg{}, byName: map[string][]string{}}
	modules := map[string]string{} // directory → module path
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "node_modules", "testdata", ".git":
				return filepath.SkipDir
			}
			return nil
		}
		if d.Name() == "go.mod" {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			for _, line := range strings.Split(string(b), "\n") {
				if m, ok := strings.CutPrefix(line, "module "); ok {
					modules[filepath.Dir(p)] = strings.TrimSpace(m)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "node_modules", "testdata", ".git":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		dir := filepath.Dir(p)
		mod := dir
		for modules[mod] == "" && mod != root && mod != "." {
			mod = filepath.Dir(mod)
		}
		rel, err := filepath.Rel(mod, dir)
		if err != nil {
			return err
		}
		ipath := path.Join(modules[mod], filepath.ToSlash(rel))
		fset := token.NewFileSet()
		af, err := parser.ParseFile(fset, p, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		key := ipath
		if strings.HasSuffix(af.Name.Name, "_test") {
			key += "_test"
		}
		pkg := r.pkgs[key]
		if pkg == nil {
			pkg = &declPkg{path: ipath, module: modules[mod], name: af.Name.Name, names: map[string]bool{},
				members: map[string]map[string]bool{}, embeds: map[string][]string{}, idents: map[string]bool{}}
			r.pkgs[key] = pkg
			if key == ipath {
				r.byName[path.Base(ipath)] = append(r.byName[path.Base(ipath)], ipath)
				if path.Base(ipath) != af.Name.Name {
					r.byName[af.Name.Name] = append(r.byName[af.Name.Name], ipath)
				}
			}
		}
		df := &docFile{name: p, fset: fset, ast: af, imports: map[string]string{}}
		for _, im := range af.Imports {
			ip, _ := strconv.Unquote(im.Path.Value)
			n := path.Base(ip)
			if strings.HasPrefix(n, "v") && strings.Count(ip, "/") > 1 { // go-redis/v9
				if _, err := strconv.Atoi(n[1:]); err == nil {
					n = path.Base(path.Dir(ip))
				}
			}
			if im.Name != nil {
				n = im.Name.Name
			}
			df.imports[n] = ip
		}
		pkg.files = append(pkg.files, df)
		pkg.declare(af)
		ast.Inspect(af, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok {
				pkg.idents[id.Name] = true
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	r.global = map[string]bool{}
	for _, p := range r.pkgs {
		if p.module != rootModule {
			continue // the engine cites the library's names only
		}
		for n := range p.names {
			r.global[n] = true
		}
		for _, ms := range p.members {
			for m := range ms {
				r.global[m] = true
			}
		}
	}
	// An external test package sees the package it tests.
	for key, p := range r.pkgs {
		if base := r.pkgs[strings.TrimSuffix(key, "_test")]; base != p && base != nil {
			for _, f := range p.files {
				f.imports[base.name] = base.path
			}
		}
	}
	return r
}

// declare records what af declares.
func (p *declPkg) declare(af *ast.File) {
	member := func(typ, name string) {
		if p.members[typ] == nil {
			p.members[typ] = map[string]bool{}
		}
		p.members[typ][name] = true
	}
	for _, d := range af.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil {
				p.names[d.Name.Name] = true
				continue
			}
			if typ := typeName(d.Recv.List[0].Type); typ != "" {
				member(typ, d.Name.Name)
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.ValueSpec:
					for _, n := range s.Names {
						p.names[n.Name] = true
					}
				case *ast.TypeSpec:
					p.names[s.Name.Name] = true
					member(s.Name.Name, "") // known, even without members
					p.declareType(s.Name.Name, s.Type, member)
				}
			}
		}
	}
}

// declareType records the fields, interface methods and embedded types of
// a type.
func (p *declPkg) declareType(typ string, e ast.Expr, member func(typ, name string)) {
	var fields *ast.FieldList
	switch e := e.(type) {
	case *ast.StructType:
		fields = e.Fields
	case *ast.InterfaceType:
		fields = e.Methods
	default:
		return
	}
	for _, f := range fields.List {
		if len(f.Names) == 0 {
			emb := exprName(f.Type)
			p.embeds[typ] = append(p.embeds[typ], emb)
			member(typ, path.Ext("." + emb)[1:])
			continue
		}
		for _, n := range f.Names {
			member(typ, n.Name)
		}
	}
}

// typeName returns the name of a receiver's type.
func typeName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return typeName(e.X)
	case *ast.IndexExpr:
		return typeName(e.X)
	case *ast.IndexListExpr:
		return typeName(e.X)
	case *ast.Ident:
		return e.Name
	}
	return ""
}

// exprName returns "T" or "pkg.T" for an embedded type.
func exprName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return exprName(e.X)
	case *ast.IndexExpr:
		return exprName(e.X)
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		if x, ok := e.X.(*ast.Ident); ok {
			return x.Name + "." + e.Sel.Name
		}
	}
	return ""
}

// hasMember reports whether type typ of p has member m, its own or
// promoted from an embedded type (in p, or in an imported package of
// the repository: imports are those of the file that embeds it).
func (r *docRepo) hasMember(p *declPkg, typ, m string, seen int) bool {
	if p.members[typ][m] {
		return true
	}
	if seen > 5 {
		return false
	}
	for _, emb := range p.embeds[typ] {
		if pn, tn, ok := strings.Cut(emb, "."); ok {
			for _, ip := range r.byName[pn] {
				if q := r.pkgs[ip]; q != nil && r.hasMember(q, tn, m, seen+1) {
					return true
				}
			}
			if len(r.byName[pn]) == 0 {
				return true // another module's type: not checked
			}
			continue
		}
		if r.hasMember(p, emb, m, seen+1) {
			return true
		}
	}
	return false
}

var (
	// docLink is a doc link: [X], [X.Y], [pkg.X.Y], [*X], and the member
	// after it ([X].Y).
	docLink = regexp.MustCompile(`(^|[^\w\]])\[\*?([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)\](\.[A-Za-z_]\w*)?`)
	// qualName is a qualified name in prose: A.B or A.B.C.
	qualName = regexp.MustCompile(`(^|[^\w.\[/*"-])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*){1,2})\b`)
	// camelName is a Go name in prose, told from words by a capital
	// after a lower-case letter: holdEnding, HeldHere.
	camelName = regexp.MustCompile(`(^|[^\w.\[/*"'-])([A-Za-z]\w*[a-z][A-Z]\w*)\b(?:[^.(\w]|$)`)
	// nounName is a capitalised word named as a Go name is: alone in
	// parentheses, or possessive ("(Through)", "an Op's").
	nounName = regexp.MustCompile(`(\(|\b[Aa]n? )([A-Z][a-z]\w*)(?:\)|'s\b)`)
	// notMember are words after a dot that make a file or a host name.
	notMember = map[string]bool{"go": true, "lua": true, "md": true, "c": true, "mod": true, "sum": true, "json": true, "yml": true, "io": true, "com": true, "org": true, "dev": true, "sh": true}
)

// check returns the stale references in f's comments, "file:line: ref".
func (r *docRepo) check(p *declPkg, f *docFile) []string {
	var stale []string
	for _, cg := range f.ast.Comments {
		for _, c := range cg.List {
			text := prose(c.Text)
			pos := f.fset.Position(c.Slash)
			reported := map[int]bool{}
			report := func(at int, ref string) {
				if reported[at] {
					return
				}
				reported[at] = true
				line := pos.Line + strings.Count(text[:at], "\n")
				rel := f.name
				if i := strings.Index(rel, string(filepath.Separator)+".."+string(filepath.Separator)); i >= 0 {
					rel = rel[i+4:]
				}
				stale = append(stale, rel+":"+strconv.Itoa(line)+": "+ref)
			}
			links := docLink.FindAllStringSubmatchIndex(text, -1)
			for _, m := range links {
				ref := text[m[4]:m[5]]
				after := ""
				if m[6] >= 0 {
					after = text[m[6]+1 : m[7]]
				}
				if !r.resolveLink(p, f, ref, after) {
					report(m[4], "["+ref+"]"+strings.TrimPrefix(text[max(m[6], m[5]):max(m[7], m[5])], "]"))
				}
			}
			if !strings.Contains(p.path, "/internal/core") {
				goto qualified
			}
			for _, m := range append(camelName.FindAllStringSubmatchIndex(text, -1), nounName.FindAllStringSubmatchIndex(text, -1)...) {
				if ref := text[m[4]:m[5]]; !inLink(links, m[4]) && !r.known(p, ref) {
					report(m[4], ref)
				}
			}
		qualified:
			for _, m := range qualName.FindAllStringSubmatchIndex(text, -1) {
				ref := text[m[4]:m[5]]
				if inLink(links, m[4]) {
					continue
				}
				if ok, checked := r.resolveProse(p, f, ref); checked && !ok {
					report(m[4], ref)
				}
			}
		}
	}
	return stale
}

var (
	// pkgMention is a package named in prose: "(package X", "the X package".
	pkgMention = regexp.MustCompile(`\(package\s+([a-z][a-z0-9]*)\b|\b[Tt]he\s+([a-z][a-z0-9]*)\s+package\b`)
	// pathName is a name qualified by its package's path, with a member
	// or not: internal/keys.Request, internal/core/pipeline.Pipeline.Runner.
	pathName = regexp.MustCompile(`(^|[^\w./-])((?:[a-z0-9_]+/)+[a-z0-9_]+)\.([A-Za-z_]\w*)(?:\.([A-Za-z_]\w*))?\b`)
	// oneLetter is a one-letter name in prose (not "a"), not a unit after
	// a number (checked apart) nor an abbreviation ("i.e.").
	oneLetter = regexp.MustCompile(`(^|[\s(\[])([b-z])([\s,:;)\]']|\.(?:\s|$)|$)`)
	// notPackage are words before "package" that name no package.
	notPackage = map[string]bool{"root": true, "same": true, "main": true, "whole": true, "test": true, "standard": true, "own": true, "other": true}
)

// checkGroups returns the stale references read in each comment group as
// one text, since they may span its lines: the packages named in prose
// and the names qualified by a package's path; in the engine also the
// one-letter names of functions' doc comments that are no parameter.
func (r *docRepo) checkGroups(p *declPkg, f *docFile) []string {
	var stale []string
	rel := f.name
	if i := strings.Index(rel, string(filepath.Separator)+".."+string(filepath.Separator)); i >= 0 {
		rel = rel[i+4:]
	}
	report := func(cg *ast.CommentGroup, text string, at int, ref string) {
		line := f.fset.Position(cg.Pos()).Line + strings.Count(text[:at], "\n")
		stale = append(stale, rel+":"+strconv.Itoa(line)+": "+ref)
	}
	for _, cg := range f.ast.Comments {
		text := groupText(cg)
		for _, m := range pkgMention.FindAllStringSubmatchIndex(text, -1) {
			at := m[2]
			if at < 0 {
				at = m[4]
			}
			name := text[at:max(m[3], m[5])]
			if !notPackage[name] && !r.isPackage(p, f, name) {
				report(cg, text, at, "package "+name)
			}
		}
		for _, m := range pathName.FindAllStringSubmatchIndex(text, -1) {
			dir, name, member := text[m[4]:m[5]], text[m[6]:m[7]], ""
			if m[8] >= 0 {
				member = text[m[8]:m[9]]
			}
			if !r.resolvePath(dir, name, member) {
				report(cg, text, m[4], text[m[4]:max(m[7], m[9])])
			}
		}
	}
	if !strings.Contains(p.path, "/internal/core") {
		return stale
	}
	for _, d := range f.ast.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Doc == nil {
			continue
		}
		params := map[string]bool{}
		for _, fl := range []*ast.FieldList{fd.Recv, fd.Type.TypeParams, fd.Type.Params, fd.Type.Results} {
			if fl == nil {
				continue
			}
			for _, field := range fl.List {
				for _, n := range field.Names {
					params[n.Name] = true
				}
			}
		}
		text := groupText(fd.Doc)
		for _, m := range oneLetter.FindAllStringSubmatchIndex(text, -1) {
			name := text[m[4]:m[5]]
			before := strings.TrimRight(text[:m[4]], " ")
			if params[name] || p.names[name] || before != "" && before[len(before)-1] >= '0' && before[len(before)-1] <= '9' {
				continue // a parameter, a package-level name, or a unit (5 s)
			}
			report(fd.Doc, text, m[4], name+" (no parameter of "+fd.Name.Name+")")
		}
	}
	return stale
}

// groupText returns the prose of a comment group (prose), its comment
// markers removed, one line per line of the file.
func groupText(cg *ast.CommentGroup) string {
	lines := make([]string, 0, len(cg.List))
	for _, c := range cg.List {
		t := prose(c.Text)
		t = strings.TrimPrefix(strings.TrimPrefix(t, "//"), "/*")
		lines = append(lines, strings.TrimSuffix(t, "*/"))
	}
	return strings.Join(lines, "\n")
}

// isPackage reports whether name, named as a package in a comment of f,
// is one: f's package, one f imports, one of the repository's, or one of
// the standard library's.
func (r *docRepo) isPackage(p *declPkg, f *docFile, name string) bool {
	if name == p.name || f.imports[name] != "" || len(r.byName[name]) > 0 {
		return true
	}
	_, err := os.Stat(filepath.Join(build.Default.GOROOT, "src", name))
	return err == nil
}

// resolvePath reports whether dir.name (dir.name.member, when member is
// set) names a declaration, when dir is the path of one of the
// repository's packages (from a module's root, or whole); a path of
// another module's or the standard library's is not checked, nor a file
// (dir/name.go). A path that starts with a directory of the repository's
// root but is no package of it is stale: the package moved.
func (r *docRepo) resolvePath(dir, name, member string) bool {
	if notMember[name] || (member != "" && notMember[member]) {
		return true
	}
	for key, q := range r.pkgs {
		if key != q.path || q.path != dir && !strings.HasSuffix(q.path, "/"+dir) {
			continue // an external test package, or another path
		}
		if member == "" {
			return q.names[name]
		}
		return q.members[name] != nil && r.hasMember(q, name, member, 0)
	}
	first, _, _ := strings.Cut(dir, "/")
	if _, err := os.Stat(filepath.Join(build.Default.GOROOT, "src", dir)); err == nil {
		return true
	}
	st, err := os.Stat(filepath.Join("..", "..", first))
	return err != nil || !st.IsDir()
}

// prose returns a comment's text with its code blocks (lines indented
// with a tab after the comment marker) blanked, keeping the line count.
func prose(text string) string {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimPrefix(l, "//"), "\t") {
			lines[i] = ""
		}
	}
	return strings.Join(lines, "\n")
}

// foreign are names of other code that the engine's comments cite
// (Redisson's Java).
var foreign = map[string]bool{"checkLockSyncedSlaves": true, "Redisson": true, "Ring": true}

// rootModule is the library's module.
const rootModule = "github.com/redisync/redisync"

// known reports whether name is a name of p's code (a declaration, a
// parameter, a local), or a declaration of any package of the repository.
func (r *docRepo) known(p *declPkg, name string) bool {
	return p.idents[name] || r.global[name] || foreign[name]
}

func inLink(links [][]int, at int) bool {
	for _, l := range links {
		if at >= l[2] && at < max(l[5], l[7]) {
			return true
		}
	}
	return false
}

// builtins may be linked without a declaration.
var builtins = map[string]bool{"error": true, "string": true, "int": true, "any": true, "nil": true, "true": true, "false": true}

// resolveLink reports whether the doc link ref (then after, when set)
// names a declaration.
func (r *docRepo) resolveLink(p *declPkg, f *docFile, ref, after string) bool {
	parts := strings.Split(ref, ".")
	if len(parts) == 1 && builtins[parts[0]] && after == "" {
		return true
	}
	ok, checked := r.resolve(p, f, parts, true)
	if !checked {
		return true // another module's package
	}
	if ok && after != "" {
		parts = append(parts, after)
		ok, _ = r.resolve(p, f, parts, true)
	}
	return ok
}

// resolveProse resolves a qualified name in prose; checked is false when
// its first part is neither a type of p nor a package of the repository.
func (r *docRepo) resolveProse(p *declPkg, f *docFile, ref string) (ok, checked bool) {
	parts := strings.Split(ref, ".")
	last := parts[len(parts)-1]
	if notMember[parts[1]] || strings.ToUpper(last) == last {
		return true, false // a file, a host, a Java constant
	}
	if _, isType := p.members[parts[0]]; !isType && len(parts) == 2 && !ast.IsExported(last) {
		return true, false // pkg.word: an attribute's or a metric's name
	}
	return r.resolve(p, f, parts, false)
}

// resolve resolves parts ([X], [X.Y], [pkg.X], [pkg.X.Y]) from f in p.
// In a link an unknown first part is stale; in prose it is not checked.
func (r *docRepo) resolve(p *declPkg, f *docFile, parts []string, link bool) (ok, checked bool) {
	first := parts[0]
	if _, isType := p.members[first]; isType || (link && p.names[first]) {
		switch len(parts) {
		case 1:
			return true, true
		case 2:
			return r.hasMember(p, first, parts[1], 0), true
		}
		return false, true
	}
	if len(parts) == 1 {
		// A link to a package.
		_, imported := f.imports[first]
		return imported || len(r.byName[first]) > 0, true
	}
	// A package: imported by the file, else any of the repository's by
	// its name.
	var paths []string
	if ip, ok := f.imports[first]; ok {
		if r.pkgs[ip] == nil {
			return true, false // another module's package
		}
		paths = []string{ip}
	} else {
		paths = r.byName[first]
	}
	if len(paths) == 0 {
		return !link, link
	}
	for _, ip := range paths {
		q := r.pkgs[ip]
		if !link && len(parts) == 3 && q.members[parts[1]] == nil {
			return true, false // pkg.word.word: a metric's name, say
		}
		switch {
		case len(parts) == 2 && q.names[parts[1]]:
			return true, true
		case len(parts) == 3 && q.members[parts[1]] != nil && r.hasMember(q, parts[1], parts[2], 0):
			return true, true
		}
	}
	return false, true
}

// mdName is a qualified name at the start of a Markdown code span:
// `pkg.Name`, `pkg.Type.Method(…)`.
var mdName = regexp.MustCompile("`([a-z]\\w*(?:\\.[A-Za-z_]\\w*){1,2})\\b")

// TestMarkdownNamesResolve: every name a Markdown file of the repository
// (README, docs/, FAULTS.md; not the changelog, whose entries name what
// was then) writes in a code span qualified by
// one of the repository's packages (`rlock.WithFencing`,
// `redisync.Client.Stats`) names a declaration that exists. Names of
// other packages (`errors.Is`, `redis.NewClient`) and a variable's
// (`l.Lock`) are not checked.
func TestMarkdownNamesResolve(t *testing.T) {
	root := filepath.Join("..", "..")
	repo := loadRepo(t, root)
	var stale []string
	files := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "node_modules", "testdata", ".git":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".md") || d.Name() == "CHANGELOG.md" {
			return nil // a history names what was, renamed since
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files++
		rel, _ := filepath.Rel(root, p)
		for i, line := range strings.Split(string(b), "\n") {
			for _, m := range mdName.FindAllStringSubmatch(line, -1) {
				parts := strings.Split(m[1], ".")
				if len(repo.byName[parts[0]]) == 0 || notMember[parts[1]] || !ast.IsExported(parts[1]) {
					continue // another package, a file, a metric's name (redisync.wait.duration)
				}
				if !repo.resolveMarkdown(parts) {
					stale = append(stale, rel+":"+strconv.Itoa(i+1)+": "+m[1])
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range stale {
		t.Errorf("stale name: %s", s)
	}
	t.Logf("%d Markdown files, %d stale names", files, len(stale))
}

// resolveMarkdown reports whether parts (pkg, Name, member) name a
// declaration of a package of the repository of that name, its tests'
// included (`rlock.TestFencingTokensGrowAcrossRestart`).
func (r *docRepo) resolveMarkdown(parts []string) bool {
	var qs []*declPkg
	for _, ip := range r.byName[parts[0]] {
		qs = append(qs, r.pkgs[ip], r.pkgs[ip+"_test"])
	}
	for _, q := range qs {
		switch {
		case q == nil:
		case len(parts) == 2 && q.names[parts[1]]:
			return true
		case len(parts) == 3 && q.members[parts[1]] != nil && r.hasMember(q, parts[1], parts[2], 0):
			return true
		case len(parts) == 3 && q.names[parts[1]] && q.members[parts[1]] == nil:
			return true // a function's or a variable's member: a call's result (not checked)
		}
	}
	return false
}
