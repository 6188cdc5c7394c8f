package cron

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ErrSyntax wraps every parse error.
var ErrSyntax = errors.New("cron: invalid schedule")

// Schedule is a parsed schedule: one bit per allowed value of each field.
type Schedule struct {
	minute, hour, dom, month, dow uint64
	// domStar/dowStar: the field was "*" or "?" (possibly with a step),
	// which makes the day fields combine with AND instead of OR.
	domStar, dowStar bool
	// Location is the schedule's zone when it had a TZ prefix, else nil.
	Location *time.Location
}

type bounds struct {
	min, max int
	names    map[string]int
}

// Field bounds; names are matched case-insensitively. Functions rather
// than package variables so no table can be changed at run time.
func minutes() bounds { return bounds{0, 59, nil} }
func hours() bounds   { return bounds{0, 23, nil} }
func doms() bounds    { return bounds{1, 31, nil} }
func months() bounds {
	return bounds{1, 12, map[string]int{"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12}}
}
func dows() bounds {
	return bounds{0, 6, map[string]int{"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6}}
}

// descriptor expands an @-descriptor to its 5 fields.
func descriptor(d string) (string, bool) {
	switch strings.ToLower(d) {
	case "@yearly", "@annually":
		return "0 0 1 1 *", true
	case "@monthly":
		return "0 0 1 * *", true
	case "@weekly":
		return "0 0 * * 0", true
	case "@daily", "@midnight":
		return "0 0 * * *", true
	case "@hourly":
		return "0 * * * *", true
	}
	return "", false
}

// Parse parses a standard cron schedule.
func Parse(spec string) (*Schedule, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return nil, fmt.Errorf("%w: empty spec string", ErrSyntax)
	}
	var loc *time.Location
	if strings.HasPrefix(spec, "TZ=") || strings.HasPrefix(spec, "CRON_TZ=") {
		i := strings.IndexByte(spec, ' ')
		if i < 0 {
			return nil, fmt.Errorf("%w: %q: no schedule after the time zone", ErrSyntax, spec)
		}
		name := spec[strings.IndexByte(spec, '=')+1 : i]
		l, err := time.LoadLocation(name)
		if err != nil {
			return nil, fmt.Errorf("%w: provided bad location %s: %v", ErrSyntax, name, err)
		}
		loc = l
		spec = strings.TrimSpace(spec[i:])
	}
	if strings.HasPrefix(spec, "@") {
		d, ok := descriptor(spec)
		if !ok {
			return nil, fmt.Errorf("%w: unrecognized descriptor: %s", ErrSyntax, spec)
		}
		spec = d
	}
	fields := strings.Fields(spec)
	if len(fields) != 5 {
		return nil, fmt.Errorf("%w: expected exactly 5 fields, found %d: %s", ErrSyntax, len(fields), fields)
	}
	s := &Schedule{Location: loc}
	var err error
	if s.minute, _, err = parseField(fields[0], minutes()); err != nil {
		return nil, err
	}
	if s.hour, _, err = parseField(fields[1], hours()); err != nil {
		return nil, err
	}
	if s.dom, s.domStar, err = parseField(fields[2], doms()); err != nil {
		return nil, err
	}
	if s.month, _, err = parseField(fields[3], months()); err != nil {
		return nil, err
	}
	if s.dow, s.dowStar, err = parseField(fields[4], dows()); err != nil {
		return nil, err
	}
	return s, nil
}

// parseField parses a comma-separated list of ranges into a bit set.
func parseField(field string, b bounds) (uint64, bool, error) {
	var bits uint64
	star := false
	for _, part := range strings.Split(field, ",") {
		rbits, rstar, err := parseRange(part, b)
		if err != nil {
			return 0, false, err
		}
		bits |= rbits
		star = star || rstar
	}
	return bits, star, nil
}

func parseRange(expr string, b bounds) (uint64, bool, error) {
	// Messages are robfig/cron's, which users of upstream's API see.
	if strings.Count(expr, "/") > 1 {
		return 0, false, fmt.Errorf("%w: too many slashes: %s", ErrSyntax, expr)
	}
	rangePart, stepPart, hasStep := strings.Cut(expr, "/")
	if strings.Count(rangePart, "-") > 1 {
		return 0, false, fmt.Errorf("%w: too many hyphens: %s", ErrSyntax, expr)
	}
	var lo, hi int
	star := false
	switch {
	case rangePart == "*" || rangePart == "?":
		lo, hi, star = b.min, b.max, true
	default:
		l, h, isRange := strings.Cut(rangePart, "-")
		var err error
		if lo, err = value(l, expr, b); err != nil {
			return 0, false, err
		}
		hi = lo
		if isRange {
			if hi, err = value(h, expr, b); err != nil {
				return 0, false, err
			}
		} else if hasStep {
			hi = b.max // "a/n" runs from a to the end
		}
	}
	step := 1
	if hasStep {
		n, err := strconv.Atoi(stepPart)
		switch {
		case err != nil:
			return 0, false, fmt.Errorf("%w: failed to parse int from %s: %v", ErrSyntax, stepPart, err)
		case n <= 0:
			return 0, false, fmt.Errorf("%w: step of range should be a positive number: %s", ErrSyntax, expr)
		}
		step = n
		// A stepped star ("*/2") restricts the field: not a star for the
		// day-of-month/day-of-week rule (robfig/cron does the same).
		star = star && step == 1
	}
	switch {
	case lo < b.min:
		return 0, false, fmt.Errorf("%w: beginning of range (%d) below minimum (%d): %s", ErrSyntax, lo, b.min, expr)
	case hi > b.max:
		return 0, false, fmt.Errorf("%w: end of range (%d) above maximum (%d): %s", ErrSyntax, hi, b.max, expr)
	case lo > hi:
		return 0, false, fmt.Errorf("%w: beginning of range (%d) beyond end of range (%d): %s", ErrSyntax, lo, hi, expr)
	}
	var bits uint64
	for v := lo; v <= hi; v += step {
		bits |= 1 << uint(v)
	}
	return bits, star, nil
}

func value(s, expr string, b bounds) (int, error) {
	if v, ok := b.names[strings.ToLower(s)]; ok {
		return v, nil
	}
	v, err := strconv.Atoi(s)
	switch {
	case err != nil:
		return 0, fmt.Errorf("%w: failed to parse int from %s: %v", ErrSyntax, s, err)
	case v < 0:
		return 0, fmt.Errorf("%w: negative number (%d) not allowed: %s", ErrSyntax, v, expr)
	}
	return v, nil
}

// Next returns the first activation strictly after t, in t's location (or
// the schedule's TZ, when it had one), or the zero time if there is none
// within five years (e.g. "0 0 30 2 *").
func (s *Schedule) Next(t time.Time) time.Time {
	orig := t.Location()
	if s.Location != nil {
		t = t.In(s.Location)
	}
	loc := t.Location()
	t = t.Add(time.Minute - time.Duration(t.Second())*time.Second - time.Duration(t.Nanosecond()))
	limit := t.Year() + 5
	for t.Year() <= limit {
		if s.month&(1<<uint(t.Month())) == 0 {
			t = time.Date(t.Year(), t.Month()+1, 1, 0, 0, 0, 0, loc)
			continue
		}
		if !s.dayMatches(t) {
			t = time.Date(t.Year(), t.Month(), t.Day()+1, 0, 0, 0, 0, loc)
			continue
		}
		if s.hour&(1<<uint(t.Hour())) == 0 {
			next := time.Date(t.Year(), t.Month(), t.Day(), t.Hour()+1, 0, 0, 0, loc)
			if !next.After(t) { // a DST fold repeats the hour
				next = t.Add(time.Hour).Truncate(time.Hour)
			}
			t = next
			continue
		}
		if s.minute&(1<<uint(t.Minute())) == 0 {
			t = t.Add(time.Minute)
			continue
		}
		return t.In(orig)
	}
	return time.Time{}
}

func (s *Schedule) dayMatches(t time.Time) bool {
	dom := s.dom&(1<<uint(t.Day())) != 0
	dow := s.dow&(1<<uint(t.Weekday())) != 0
	if s.domStar || s.dowStar {
		return dom && dow
	}
	return dom || dow
}
