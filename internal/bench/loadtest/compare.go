package loadtest

import (
	"fmt"
	"io"
	"strconv"
)

// Compare writes a markdown table of a's and b's key figures and p99
// latencies side by side, with b's change from a. Rows only one side has
// are shown with a blank on the other.
func Compare(w io.Writer, a, b *Result, nameA, nameB string) error {
	var err error
	p := func(format string, args ...any) {
		if err == nil {
			_, err = fmt.Fprintf(w, format, args...)
		}
	}
	p("# compare %s vs %s\n\n", a.Scenario, b.Scenario)
	p("- A: %s (%s, %s)\n- B: %s (%s, %s)\n\n", nameA, a.Start.UTC().Format("2006-01-02 15:04"), a.Command,
		nameB, b.Start.UTC().Format("2006-01-02 15:04"), b.Command)
	p("| figure | A | B | Δ | Δ%% |\n|---|---:|---:|---:|---:|\n")
	for _, row := range compareRows(a, b) {
		p("| %s | %s | %s | %s | %s |\n", row.label, cell(row.a, row.unit), cell(row.b, row.unit), delta(row.a, row.b, row.unit), pct(row.a, row.b))
	}
	return err
}

type compareRow struct {
	label, unit string
	a, b        *float64
}

func compareRows(a, b *Result) []compareRow {
	var rows []compareRow
	index := map[string]int{}
	add := func(key, label, unit string, v float64, first bool) {
		i, ok := index[key]
		if !ok {
			index[key] = len(rows)
			rows = append(rows, compareRow{label: label, unit: unit})
			i = len(rows) - 1
		}
		if first {
			rows[i].a = &v
		} else {
			rows[i].b = &v
		}
	}
	for n, r := range []*Result{a, b} {
		for _, f := range r.Figures {
			add("f:"+f.Key, f.Label, f.Unit, f.Value, n == 0)
		}
		for _, l := range r.Latencies {
			name := l.Key.String()
			if l.Phase != "" {
				name = l.Phase + ": " + name
			}
			add("l:"+name, name+" p99", "s", l.P99.D().Seconds(), n == 0)
		}
	}
	return rows
}

func cell(v *float64, unit string) string {
	if v == nil {
		return "–"
	}
	return FormatValue(*v, unit)
}

func delta(a, b *float64, unit string) string {
	if a == nil || b == nil {
		return "–"
	}
	d := *b - *a
	s := FormatValue(d, unit)
	if d > 0 {
		s = "+" + s
	}
	return s
}

func pct(a, b *float64) string {
	if a == nil || b == nil || *a == 0 {
		return "–"
	}
	d := (*b - *a) / *a * 100
	s := strconv.FormatFloat(d, 'f', 1, 64) + "%"
	if d > 0 {
		s = "+" + s
	}
	return s
}
