package main

import (
	"fmt"
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
}

var barCharts = []barChart{
	{"main-ops-per-sec.svg", "Operations per second (higher is better)", "ops/s",
		func(r Result) *float64 { return r.OpsPerSec }, nil},
	{"main-redis-cpu.svg", "Redis CPU per operation (lower is better)", "µs/op",
		func(r Result) *float64 { return r.ServerCPUusPerOp }, nil},
	{"main-client-cpu.svg", "Client CPU per operation (lower is better)", "µs/op",
		func(r Result) *float64 { return r.ClientCPUusPerOp }, nil},
	{"main-handoff-p50.svg", "Handoff p50 (lower is better)", "ms",
		func(r Result) *float64 { return r.P50ms }, []string{scHandoff, scHandoffReplica}},
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
	var libs, groups []string
	vals := map[[2]string]float64{}
	for _, sc := range scenarios {
		has := false
		for _, r := range results {
			if r.Scenario != sc {
				continue
			}
			v := bc.value(r)
			if v == nil {
				continue
			}
			has = true
			vals[[2]string{sc, r.Library}] = *v
			if !slices.Contains(libs, r.Library) {
				libs = append(libs, r.Library)
			}
		}
		if has {
			groups = append(groups, sc)
		}
	}
	if len(groups) == 0 {
		return false, nil
	}
	p := plot.New()
	p.Title.Text = bc.title
	p.Y.Label.Text = bc.unit
	p.Legend.Top = true
	width := vg.Points(min(14, 300/float64(len(libs))))
	for i, lib := range libs {
		v := make(plotter.Values, len(groups))
		for j, sc := range groups {
			v[j] = vals[[2]string{sc, lib}]
		}
		bars, err := plotter.NewBarChart(v, width)
		if err != nil {
			return false, err
		}
		bars.LineStyle.Width = 0
		bars.Color = plotutil.Color(i)
		bars.Offset = width * vg.Length(float64(i)-float64(len(libs)-1)/2)
		p.Add(bars)
		p.Legend.Add(lib, bars)
	}
	p.NominalX(groups...)
	p.Add(plotter.NewGrid())
	// Room above the bars for the legend.
	ymax := 0.0
	for _, v := range vals {
		ymax = math.Max(ymax, v)
	}
	p.Y.Min, p.Y.Max = 0, ymax*(1.1+0.13*float64(len(libs)))
	p.X.Min, p.X.Max = -0.7, float64(len(groups))-0.3
	w := vg.Points(math.Max(480, float64(len(groups)*len(libs))*width.Points()+160))
	return true, p.Save(w, 360, path)
}

// drawCurve draws the curves of one scale scenario's metric on log-log
// axes, one line per library; it returns false when no library has two
// positive points.
func drawCurve(path, scenario, metric string, curves []Curve) (bool, error) {
	p := plot.New()
	p.Title.Text = scenario + ": " + strings.ReplaceAll(metric, "_", " ")
	p.X.Label.Text = sizeLabel[scenario]
	p.Y.Label.Text = strings.ReplaceAll(metric, "_", " ")
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
		line.Color, points.Color = plotutil.Color(n), plotutil.Color(n)
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
	scClientsOne:     "client processes on one lock",
	scClientsMany:    "client processes, 4 locks each",
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
