package main

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// The charts "make bench" draws next to results.json (drawCharts): the
// main table as grouped bars, one group per scenario and one bar per
// library, for ops/s, Redis CPU per op, client CPU per op and handoff
// p50; and each scale curve (one figure of one scale scenario) on log-log
// axes, one line per library, the fitted exponent in the legend.

// barChart is one grouped bar chart of the main table: a figure of every
// row of the scenarios that have it.
type barChart struct {
	file, title, unit string
	value             func(Result) *float64
	scenarios         []string // in this order; nil: every main scenario with the figure
	// higher: a higher figure is better; each group is drawn relative
	// to its best peer's figure (the highest, or with higher false the
	// lowest), whose bar is 1, so that scenarios of different sizes share
	// one axis.
	higher bool
}

var barCharts = []barChart{
	{"main-ops-per-sec.svg", "Operations per second, relative to the best peer's (higher is better)", "ops/s ÷ best peer's",
		func(r Result) *float64 { return r.OpsPerSec }, nil, true},
	{"main-redis-cpu.svg", "Redis CPU per operation, relative to the best peer's (lower is better)", "µs/op ÷ best peer's",
		func(r Result) *float64 { return r.ServerCPUusPerOp }, nil, false},
	{"main-client-cpu.svg", "Client CPU per operation, relative to the best peer's (lower is better)", "µs/op ÷ best peer's",
		func(r Result) *float64 { return r.ClientCPUusPerOp }, nil, false},
	{"main-handoff-p50.svg", "Handoff p50, relative to the best peer's (lower is better)", "p50 ÷ best peer's",
		func(r Result) *float64 { return r.P50ms }, []string{scHandoff}, false},
}

// mainBarScenarios are the lock scenarios the bar charts show (the others
// have a row per library of their own kind, or no peers).
var mainBarScenarios = []string{scUncontended, scContended0, scContended1, scContended0Many, scContended1Many, scManyLocks}

// drawCharts draws the charts of rep into dir and returns their paths.
func drawCharts(dir string, rep Report) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var files []string
	for _, bc := range barCharts {
		scs := bc.scenarios
		if scs == nil {
			scs = mainBarScenarios
		}
		path := filepath.Join(dir, bc.file)
		ok, err := drawBars(path, bc, scs, rep.Results)
		if err != nil {
			return files, fmt.Errorf("%s: %w", bc.file, err)
		}
		if ok {
			files = append(files, path)
		}
	}
	seen := map[[2]string]bool{}
	for _, c := range rep.Curves {
		k := [2]string{c.Scenario, c.Metric}
		if seen[k] {
			continue
		}
		seen[k] = true
		path := filepath.Join(dir, c.Scenario+"-"+strings.ReplaceAll(c.Metric, "_", "-")+".svg")
		ok, err := drawCurve(path, c.Scenario, c.Metric, rep.Curves)
		if err != nil {
			return files, fmt.Errorf("%s: %w", path, err)
		}
		if ok {
			files = append(files, path)
		}
	}
	return files, nil
}

// drawBars draws one grouped bar chart; it draws nothing and returns
// false when no row has the figure.
func drawBars(path string, bc barChart, scenarios []string, results []Result) (bool, error) {
	groups, libs, vals := barValues(bc, scenarios, results)
	if len(groups) == 0 {
		return false, nil
	}
	p := plot.New()
	p.Title.Text = bc.title
	p.Y.Label.Text = bc.unit
	p.Legend.Top = true
	width := vg.Points(min(14, 300/float64(len(libs))))
	ymax := 0.0
	for i, lib := range libs {
		v := make(plotter.Values, len(groups))
		for j, sc := range groups {
			v[j] = vals[[2]string{sc, lib}]
			ymax = math.Max(ymax, v[j])
		}
		bars, err := plotter.NewBarChart(v, width)
		if err != nil {
			return false, err
		}
		bars.LineStyle.Width = 0
		bars.Color = palette[i%len(palette)]
		bars.Offset = width * vg.Length(float64(i)-float64(len(libs)-1)/2)
		p.Add(bars)
		p.Legend.Add(lib, bars)
	}
	p.NominalX(groups...)
	p.Add(plotter.NewGrid())
	one, err := plotter.NewLine(plotter.XYs{{X: -0.7, Y: 1}, {X: float64(len(groups)) - 0.3, Y: 1}})
	if err != nil {
		return false, err
	}
	one.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(one)
	// Room above the bars for the legend.
	p.Y.Min, p.Y.Max = 0, ymax*(1.15+0.06*float64(len(libs)))
	p.X.Min, p.X.Max = -0.7, float64(len(groups))-0.3
	w := vg.Points(math.Max(480, float64(len(groups)*len(libs))*width.Points()+160))
	return true, p.Save(w, 360, path)
}

// barValues returns the scenarios that have the figure, the libraries
// that do, and each (scenario, library)'s figure divided by the best
// peer's in its scenario (a scenario without a peer is left out).
func barValues(bc barChart, scenarios []string, results []Result) (groups, libs []string, vals map[[2]string]float64) {
	vals = map[[2]string]float64{}
	for _, r := range results {
		if v := bc.value(r); v != nil && slices.Contains(scenarios, r.Scenario) {
			vals[[2]string{r.Scenario, r.Library}] = *v
		}
	}
	for _, sc := range scenarios {
		best := bc.bestPeer(sc, vals)
		if math.IsNaN(best) {
			continue
		}
		groups = append(groups, sc)
		for k, v := range vals {
			if k[0] == sc {
				vals[k] = v / best
			}
		}
	}
	for _, r := range results {
		if _, ok := vals[[2]string{r.Scenario, r.Library}]; ok && slices.Contains(groups, r.Scenario) && !slices.Contains(libs, r.Library) {
			libs = append(libs, r.Library)
		}
	}
	return groups, libs, vals
}

// bestPeer returns the best peer's figure in scenario sc, NaN for none.
func (bc barChart) bestPeer(sc string, vals map[[2]string]float64) float64 {
	best := math.NaN()
	for k, v := range vals {
		if k[0] == sc && isPeer(k[1]) && v > 0 && (math.IsNaN(best) || bc.better(v, best)) {
			best = v
		}
	}
	return best
}

// better reports whether figure a is better than b.
func (bc barChart) better(a, b float64) bool {
	if bc.higher {
		return a > b
	}
	return a < b
}

// drawCurve draws the curves of one scale scenario's metric on log-log
// axes, one line per library; it returns false when no library has two
// positive points.
func drawCurve(path, scenario, metric string, curves []Curve) (bool, error) {
	p := plot.New()
	p.Title.Text = scenario + ": " + curveLabel(scenario, metric)
	p.X.Label.Text = sizeLabel[scenario]
	p.Y.Label.Text = curveLabel(scenario, metric)
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = logTicks{}, logTicks{}
	p.Legend.Top, p.Legend.Left = true, true
	n, ymax := 0, 0.0
	for _, c := range curves {
		if c.Scenario != scenario || c.Metric != metric {
			continue
		}
		var xys plotter.XYs
		for i := range c.Sizes {
			if c.Sizes[i] > 0 && c.Values[i] > 0 {
				xys = append(xys, plotter.XY{X: c.Sizes[i], Y: c.Values[i]})
				ymax = math.Max(ymax, c.Values[i])
			}
		}
		if len(xys) < 1 {
			continue
		}
		line, points, err := plotter.NewLinePoints(xys)
		if err != nil {
			return false, err
		}
		line.Color, points.Color = palette[n%len(palette)], palette[n%len(palette)]
		points.Shape = plotutil.Shape(n)
		p.Add(line, points)
		label := c.Library
		if c.Exponent != nil {
			label += fmt.Sprintf(" (k = %.2f)", *c.Exponent)
		}
		p.Legend.Add(label, line, points)
		n++
	}
	if n == 0 {
		return false, nil
	}
	p.Add(plotter.NewGrid())
	// Room above the lines for the legend (a decade per 2.5 lines).
	p.Y.Max = ymax * math.Pow(10, float64(n)/2.5)
	return true, p.Save(560, 400, path)
}

// sizeLabel names the size axis of each scale scenario.
var sizeLabel = map[string]string{
	scWaiters1:       "waiting goroutines (W), 1 client",
	scWaiters16:      "waiting goroutines (W), over 16 clients",
	scHolds:          "locks held by one client (N)",
	scContendedLocks: "contended locks (L), 2 goroutines each",
	scClientsOne:     "client processes on one lock (C)",
	scClientsSem:     "client processes on one semaphore of max(1, C/4) permits (C)",
	scClientsMany:    "client processes, 4 locks each",
	scClusterMasters: "Cluster masters",
}

// clientsOneLabels name the figures of the clients-one-* curves.
var clientsOneLabels = map[string]string{
	"ops_per_sec":                  "acquisitions/s",
	"cross_process_handoffs_per_s": "cross-process handoffs/s",
	"min_to_fair_share":            "fewest acquisitions of a process ÷ fair share",
	"longest_wait_ms":              "longest wait for Lock, ms",
	"p99_ms":                       "p99 wait for Lock, ms",
	"server_cpu_us_per_op":         "Redis CPU µs per acquisition",
	"client_cpu_us_per_op":         "client CPU µs per acquisition",
}

// curveLabel names figure metric of a scale scenario's curve.
func curveLabel(scenario, metric string) string {
	if l, ok := clientsOneLabels[metric]; ok && (scenario == scClientsOne || scenario == scClientsSem) {
		return l
	}
	return strings.ReplaceAll(metric, "_", " ")
}

// logTicks marks 1, 2 and 5 times each power of ten on a log axis, with
// labels on all of them when the axis spans less than two decades and on
// the powers of ten otherwise.
type logTicks struct{}

func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	if lo <= 0 {
		lo = hi / 1e6
	}
	dense := hi/lo < 100
	var ticks []plot.Tick
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		for _, m := range []float64{1, 2, 5} {
			v := m * math.Pow(10, e)
			if v < lo || v > hi {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || dense {
				t.Label = strconv.FormatFloat(v, 'g', 4, 64)
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
}

// palette tells up to ten libraries apart (Tableau 10).
var palette = []color.Color{
	color.RGBA{0x4e, 0x79, 0xa7, 0xff}, color.RGBA{0xf2, 0x8e, 0x2b, 0xff}, color.RGBA{0xe1, 0x57, 0x59, 0xff},
	color.RGBA{0x76, 0xb7, 0xb2, 0xff}, color.RGBA{0x59, 0xa1, 0x4f, 0xff}, color.RGBA{0xed, 0xc9, 0x48, 0xff},
	color.RGBA{0xb0, 0x7a, 0xa1, 0xff}, color.RGBA{0xff, 0x9d, 0xa7, 0xff}, color.RGBA{0x9c, 0x75, 0x5f, 0xff},
	color.RGBA{0xba, 0xb0, 0xac, 0xff},
}
