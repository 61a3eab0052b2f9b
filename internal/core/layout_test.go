package core

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"math/bits"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// The shape of the package, counted from its declarations so that it can
// be recounted: which file uses which (a file uses another when it names a
// package-level name, a method or a field declared there), the floors of
// that graph (a file stands above all it uses, with as few uses as
// possible running back up), the pairs of files that use each other both
// ways, and the methods declared on each type. Run with -v to see them.

// Bounds on the package's shape: the file graph runs one way but for a
// few uses, and no type grows past a screenful of methods; the bounds are
// what the package has. The three uses left each come from a type that
// holds one declared above it: the Client holds the registry of its handles (client.go to
// lock.go, whose handles reach the Client), a hold how Shutdown
// releases it (hold.go to release.go, which records it), the holds their
// watchdog, which renews them (watchdog.go to hold.go); all three are
// two-way pairs. The in-process handoff is one part below the lines
// (handoff.go: it knows no Lock and no Turn), so no use runs back up from
// the lines to the lock any more. A file that comes into the package takes its place
// in the order: it uses the files below it, and those above use it, not
// both.
const (
	maxBackUses    = 3
	maxTwoWayPairs = 3
	maxTypeMethods = 18
)

// coreLayout is the file graph of package core's non-test files.
type coreLayout struct {
	files   []string        // file names, sorted
	uses    map[[2]int]bool // uses[{a, b}]: file a uses file b
	methods map[string]int  // declared methods per type
	lines   map[string]int  // lines per file
}

// loadLayout type-checks the package from its source, ignoring its
// imports (only what the package declares is resolved), and records
// which file uses which.
func loadLayout(t *testing.T) *coreLayout {
	t.Helper()
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	lay := &coreLayout{uses: map[[2]int]bool{}, methods: map[string]int{}, lines: map[string]int{}}
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, n, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
		lay.files = append(lay.files, n)
		lay.lines[n] = fset.File(f.Pos()).LineCount()
	}
	index := map[string]int{}
	for i, n := range lay.files {
		index[n] = i
	}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}, Selections: map[*ast.SelectorExpr]*types.Selection{}}
	conf := types.Config{Importer: noImports{}, Error: func(error) {}}
	pkg, _ := conf.Check("github.com/redisync/redisync/internal/core", fset, files, info)
	ours := func(obj types.Object) bool {
		if obj == nil || obj.Pkg() != pkg || !obj.Pos().IsValid() {
			return false
		}
		if obj.Parent() == pkg.Scope() {
			return true
		}
		switch o := obj.(type) {
		case *types.Func:
			return o.Signature().Recv() != nil
		case *types.Var:
			return o.IsField()
		}
		return false
	}
	use := func(from token.Pos, obj types.Object) {
		if !ours(obj) {
			return
		}
		a, b := index[fset.Position(from).Filename], index[fset.Position(obj.Pos()).Filename]
		if a != b {
			lay.uses[[2]int{a, b}] = true
		}
	}
	for id, obj := range info.Uses {
		use(id.Pos(), obj)
	}
	for sel, s := range info.Selections {
		use(sel.Sel.Pos(), s.Obj())
	}
	for _, f := range files {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv == nil {
				continue
			}
			rt := fd.Recv.List[0].Type
			if st, ok := rt.(*ast.StarExpr); ok {
				rt = st.X
			}
			if ix, ok := rt.(*ast.IndexExpr); ok {
				rt = ix.X
			}
			if id, ok := rt.(*ast.Ident); ok {
				lay.methods[id.Name]++
			}
		}
	}
	return lay
}

// noImports imports every package as an empty one: the layout needs only
// what package core declares.
type noImports struct{}

func (noImports) Import(path string) (*types.Package, error) {
	return nil, fmt.Errorf("not imported: %s", path)
}

// floors orders the files so that as few uses as possible run back up
// (an exact minimum over the orders, by subsets), then puts each file one
// floor above the highest file it uses along the order. It returns each
// file's floor and the uses that run back up.
func (lay *coreLayout) floors() (floor []int, back [][2]int) {
	n := len(lay.files)
	// cost[set] is the least number of back uses among the files of set
	// when they stand below every other file; last[set] is the file that
	// stands on top of them in that order.
	out := make([]uint32, n) // out[a]: the files a uses
	for e := range lay.uses {
		out[e[0]] |= 1 << e[1]
	}
	full := uint32(1)<<n - 1
	cost := make([]int, 1<<n)
	last := make([]int8, 1<<n)
	for set := uint32(1); set <= full; set++ {
		cost[set] = 1 << 30
		for rest := set; rest != 0; rest &= rest - 1 {
			top := bits.TrailingZeros32(rest)
			below := set &^ (1 << top)
			// top stands above below: its uses of files not yet placed
			// (above it) run back up.
			c := cost[below] + bits.OnesCount32(out[top]&^below&^(1<<top))
			if c < cost[set] {
				cost[set], last[set] = c, int8(top)
			}
		}
	}
	order := make([]int, 0, n) // from the top down
	for set := full; set != 0; set &^= 1 << last[set] {
		order = append(order, int(last[set]))
	}
	pos := make([]int, n) // 0: the ground
	for i, f := range order {
		pos[f] = n - 1 - i
	}
	floor = make([]int, n)
	for i := n - 1; i >= 0; i-- { // from the ground up
		f := order[i]
		floor[f] = 1
		for b := 0; b < n; b++ {
			if out[f]&(1<<b) == 0 {
				continue
			}
			if pos[b] < pos[f] {
				floor[f] = max(floor[f], floor[b]+1)
			} else {
				back = append(back, [2]int{f, b})
			}
		}
	}
	return floor, back
}

// twoWay returns the pairs of files that use each other.
func (lay *coreLayout) twoWay() [][2]int {
	var pairs [][2]int
	for e := range lay.uses {
		if e[0] < e[1] && lay.uses[[2]int{e[1], e[0]}] {
			pairs = append(pairs, e)
		}
	}
	sort.Slice(pairs, func(i, j int) bool {
		return pairs[i][0] < pairs[j][0] || pairs[i][0] == pairs[j][0] && pairs[i][1] < pairs[j][1]
	})
	return pairs
}

// TestLayout logs the package's file graph and bounds it: the uses
// running back up, the two-way pairs and the methods of the largest type.
func TestLayout(t *testing.T) {
	lay := loadLayout(t)
	floor, back := lay.floors()
	pairs := lay.twoWay()
	top := 0
	for _, f := range floor {
		top = max(top, f)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d files, %d uses, %d floors, %d uses back up, %d two-way pairs\n",
		len(lay.files), len(lay.uses), top, len(back), len(pairs))
	for fl := top; fl >= 1; fl-- {
		for i, n := range lay.files {
			if floor[i] == fl {
				fmt.Fprintf(&b, "  floor %2d  %-14s %4d lines\n", fl, n, lay.lines[n])
			}
		}
	}
	for _, e := range back {
		fmt.Fprintf(&b, "  back up: %s -> %s\n", lay.files[e[0]], lay.files[e[1]])
	}
	for _, p := range pairs {
		fmt.Fprintf(&b, "  two-way: %s <-> %s\n", lay.files[p[0]], lay.files[p[1]])
	}
	type tm struct {
		name string
		n    int
	}
	var ms []tm
	for name, n := range lay.methods {
		ms = append(ms, tm{name, n})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].n > ms[j].n || ms[i].n == ms[j].n && ms[i].name < ms[j].name })
	for _, m := range ms[:min(6, len(ms))] {
		fmt.Fprintf(&b, "  methods: %-12s %d\n", m.name, m.n)
	}
	t.Log("\n" + b.String())
	if len(back) > maxBackUses {
		t.Errorf("%d uses run back up between the files; at most %d", len(back), maxBackUses)
	}
	if len(pairs) > maxTwoWayPairs {
		t.Errorf("%d pairs of files use each other; at most %d", len(pairs), maxTwoWayPairs)
	}
	if len(ms) > 0 && ms[0].n > maxTypeMethods {
		t.Errorf("%s has %d methods; at most %d", ms[0].name, ms[0].n, maxTypeMethods)
	}
}
