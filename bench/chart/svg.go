package main

import (
	"cmp"
	"fmt"
	"html"
	"math"
	"slices"
	"strings"
)

// chart is one SVG file to write.
type chart struct {
	file string
	svg  string
}

// series is one kind of bar in a group (p99, server CPU, ...).
type series struct {
	name  string
	color string
}

// group is the bars of one result line.
type group struct {
	name   string
	values []float64 // one per series
}

// chartsFor draws the charts of one harness's results.
func chartsFor(rs []result) []chart {
	rs = slices.Clone(rs)
	slices.SortStableFunc(rs, func(a, b result) int {
		return cmp.Or(cmp.Compare(a.Target, b.Target), cmp.Compare(a.PeriodS, b.PeriodS),
			cmp.Compare(a.Jobs, b.Jobs), cmp.Compare(a.Label, b.Label))
	})
	names := rowNames(rs)
	lags := make([]group, len(rs))
	for i, r := range rs {
		l := r.lag()
		lags[i] = group{name: names[i], values: []float64{*l.P50, *l.P99, *l.Max}}
	}
	lagSeries := []series{{"p50", "#9ecae1"}, {"p99", "#3182bd"}, {"max", "#08519c"}}
	if !rs[0].e2e() {
		return []chart{{"core-lag.svg", barChart("In process: driver lag per run (make bench)", "ms", lagSeries, lags, false)}}
	}
	cpu := make([]group, len(rs))
	for i, r := range rs {
		cpu[i] = group{name: names[i], values: []float64{*r.ServerMsFire, r.msPerFire(r.CPUDB), r.msPerFire(r.CPUTargets)}}
	}
	return []chart{
		{"e2e-lag.svg", barChart("End to end: lag at the target per row (make bench-e2e)", "ms", lagSeries, lags, false)},
		{"e2e-cpu.svg", barChart("End to end: CPU per fire per row (make bench-e2e)", "ms of CPU per fire",
			[]series{{"server", "#3182bd"}, {"mariadbd", "#e6550d"}, {"target", "#31a354"}}, cpu, true)},
	}
}

const (
	barH     = 9  // height of one bar
	groupGap = 10 // space between groups
	charW    = 6.0
	plotW    = 420
	top      = 46
	bottom   = 40
)

// barChart draws horizontal bars, one group per result line: side by side,
// or stacked into one bar when the series add up (CPU of separate processes).
func barChart(title, unit string, ss []series, gs []group, stacked bool) string {
	labelW := 0
	for _, g := range gs {
		labelW = max(labelW, len(g.name))
	}
	left := float64(labelW)*charW + 16
	perGroup := float64(len(ss) * barH)
	if stacked {
		perGroup = 2 * barH
	}
	height := top + float64(len(gs))*(perGroup+groupGap) + bottom
	width := left + plotW + 70

	var hi float64
	for _, g := range gs {
		sum := 0.0
		for _, v := range g.values {
			hi = math.Max(hi, v)
			sum += v
		}
		if stacked {
			hi = math.Max(hi, sum)
		}
	}
	scaleMax, step := niceScale(hi)
	x := func(v float64) float64 { return left + v/scaleMax*plotW }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="11">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="8" y="16" font-size="13" font-weight="bold">%s</text>`+"\n", esc(title))
	lx := left
	for _, s := range ss {
		fmt.Fprintf(&b, `<rect x="%.1f" y="26" width="10" height="10" fill="%s"/><text x="%.1f" y="35">%s</text>`+"\n", lx, s.color, lx+14, esc(s.name))
		lx += 14 + float64(len(s.name))*charW + 16
	}
	plotBottom := height - bottom
	for i := 0; float64(i)*step <= scaleMax+step/2; i++ {
		v := float64(i) * step
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%.1f" stroke="#ddd"/><text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n",
			x(v), top-4, x(v), plotBottom, x(v), plotBottom+14, tick(v))
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", left+plotW/2, plotBottom+30, esc(unit))

	y := float64(top)
	for _, g := range gs {
		fmt.Fprintf(&b, `<g class="row"><title>%s</title>`, esc(g.name))
		fmt.Fprintf(&b, `<text class="row-name" x="%.1f" y="%.1f" text-anchor="end">%s</text>`, left-6, y+perGroup/2+4, esc(g.name))
		if stacked {
			at := 0.0
			for i, v := range g.values {
				fmt.Fprintf(&b, `<rect class="bar" data-series="%s" data-value="%g" x="%.1f" y="%.1f" width="%.1f" height="%d" fill="%s"/>`,
					esc(ss[i].name), v, x(at), y+barH/2, x(at+v)-x(at), barH, ss[i].color)
				at += v
			}
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f">%s</text>`, x(at)+4, y+perGroup/2+4, value(at))
		} else {
			for i, v := range g.values {
				by := y + float64(i*barH)
				fmt.Fprintf(&b, `<rect class="bar" data-series="%s" data-value="%g" x="%.1f" y="%.1f" width="%.1f" height="%d" fill="%s"/>`,
					esc(ss[i].name), v, left, by, x(v)-left, barH-1, ss[i].color)
				if i == 1 || len(g.values) == 1 {
					fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="9">%s</text>`, x(v)+3, by+barH-1, value(v))
				}
			}
		}
		b.WriteString("</g>\n")
		y += perGroup + groupGap
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// rowNames names each result line; repeated runs of the same row are told
// apart by a run number.
func rowNames(rs []result) []string {
	count := map[string]int{}
	for _, r := range rs {
		count[r.name()]++
	}
	seen := map[string]int{}
	names := make([]string, len(rs))
	for i, r := range rs {
		n := r.name()
		names[i] = n
		if count[n] > 1 {
			seen[n]++
			names[i] = fmt.Sprintf("%s, run %d", n, seen[n])
		}
	}
	return names
}

// niceScale gives an axis end at or above hi and a step of 1, 2 or 5 times a
// power of ten, about five ticks.
func niceScale(hi float64) (end, step float64) {
	if hi <= 0 {
		return 1, 0.2
	}
	raw := hi / 5
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			step = m * p
			break
		}
	}
	return math.Ceil(hi/step) * step, step
}

func tick(v float64) string {
	if v == math.Trunc(v) {
		return thousands(int(v))
	}
	return fmt.Sprintf("%.2g", v)
}

// value prints a bar's figure: whole milliseconds above 10, else three
// significant digits.
func value(v float64) string {
	if v >= 10 {
		return thousands(int(math.Round(v)))
	}
	return fmt.Sprintf("%.3g", v)
}

func esc(s string) string { return html.EscapeString(s) }
