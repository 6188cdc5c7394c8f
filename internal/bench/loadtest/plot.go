package loadtest

import (
	"fmt"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// PlotSpec asks for one plot of some of a result's series, all in the
// same unit.
type PlotSpec struct {
	File   string // e.g. "cpu.svg"; .svg or .png
	Title  string
	YLabel string
	Series []string // series names; missing or empty ones are left out
}

// WritePlot draws spec from r's series into dir. It reports false, and
// writes nothing, when none of the series has points.
func WritePlot(dir string, r *Result, spec PlotSpec) (bool, error) {
	p := plot.New()
	p.Title.Text = spec.Title
	p.X.Label.Text = "seconds since start"
	p.Y.Label.Text = spec.YLabel
	p.Y.Min = 0
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	p.Legend.Left = true
	drawn := 0
	for i, name := range spec.Series {
		s, ok := r.SeriesNamed(name)
		if !ok || len(s.Points) == 0 {
			continue
		}
		xys := make(plotter.XYs, len(s.Points))
		for j, pt := range s.Points {
			xys[j].X, xys[j].Y = pt.T, pt.V
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return false, fmt.Errorf("plot %s: series %s: %w", spec.File, name, err)
		}
		l.Color = plotutil.Color(i)
		l.Dashes = plotutil.Dashes(i)
		l.Width = vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(name, l)
		drawn++
	}
	if drawn == 0 {
		return false, nil
	}
	if err := p.Save(8*vg.Inch, 4*vg.Inch, filepath.Join(dir, spec.File)); err != nil {
		return false, fmt.Errorf("plot %s: %w", spec.File, err)
	}
	return true, nil
}
