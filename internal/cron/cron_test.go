package cron

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestNext(t *testing.T) {
	utc := func(s string) time.Time {
		v, err := time.Parse("2006-01-02 15:04", s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	cases := []struct {
		spec, from, want string
	}{
		{"* * * * *", "2026-11-22 08:00", "2026-11-22 08:01"},
		{"*/15 * * * *", "2026-11-22 08:07", "2026-11-22 08:15"},
		{"0 * * * *", "2026-11-22 08:00", "2026-11-22 09:00"},
		{"30 2 * * *", "2026-11-22 03:00", "2026-11-23 02:30"},
		{"0 0 1 * *", "2026-11-22 08:00", "2026-12-01 00:00"},
		{"0 0 1 1 *", "2026-11-22 08:00", "2027-01-01 00:00"},
		{"@hourly", "2026-11-22 08:59", "2026-11-22 09:00"},
		{"@weekly", "2026-11-22 08:00", "2026-11-29 00:00"}, // 22 Nov 2026 is a Sunday
		{"0 9 * * MON-FRI", "2026-11-21 10:00", "2026-11-23 09:00"},
		{"0 9 * * mon,wed", "2026-11-23 10:00", "2026-11-25 09:00"},
		{"0 0 29 2 *", "2026-03-01 00:00", "2028-02-29 00:00"},
		{"5/20 * * * *", "2026-11-22 08:06", "2026-11-22 08:25"},
		{"0 0 13 * FRI", "2026-11-22 08:00", "2026-11-27 00:00"},   // both restricted: OR
		{"0 0 */10 * SUN", "2026-11-23 08:00", "2026-11-29 00:00"}, // stepped star is restricted: OR
		{"0 0 * * SUN", "2026-11-23 08:00", "2026-11-29 00:00"},
		{"0 12 1-7 JAN-MAR ?", "2026-11-22 08:00", "2027-01-01 12:00"},
		{"0 0 30 2 *", "2026-11-22 08:00", ""},
	}
	for _, tc := range cases {
		s, err := Parse(tc.spec)
		if err != nil {
			t.Errorf("%q: %v", tc.spec, err)
			continue
		}
		got := s.Next(utc(tc.from))
		if tc.want == "" {
			if !got.IsZero() {
				t.Errorf("%q from %s: %s, want none", tc.spec, tc.from, got)
			}
			continue
		}
		if !got.Equal(utc(tc.want)) {
			t.Errorf("%q from %s: %s, want %s", tc.spec, tc.from, got.Format("2006-01-02 15:04 Mon"), tc.want)
		}
	}
}

func TestTimeZone(t *testing.T) {
	s, err := Parse("CRON_TZ=America/New_York 0 9 * * *")
	if err != nil {
		t.Skipf("no tzdata: %v", err)
	}
	from := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	got := s.Next(from)
	if want := time.Date(2026, 11, 22, 14, 0, 0, 0, time.UTC); !got.Equal(want) || got.Location() != time.UTC {
		t.Errorf("got %s, want %s", got, want)
	}
}

// TestParseErrors: every error wraps ErrSyntax and says what robfig/cron
// says, the text users of upstream's API read in a 422.
func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ spec, msg string }{
		{"", "empty spec string"},
		{"* * * *", "expected exactly 5 fields, found 4: [* * * *]"},
		{"* * * * * *", "expected exactly 5 fields, found 6"},
		{"60 * * * *", "end of range (60) above maximum (59): 60"},
		{"* 24 * * *", "end of range (24) above maximum (23): 24"},
		{"* * 0 * *", "beginning of range (0) below minimum (1): 0"},
		{"* * * 13 *", "end of range (13) above maximum (12): 13"},
		{"* * * * 7", "end of range (7) above maximum (6): 7"},
		{"*/0 * * * *", "step of range should be a positive number: */0"},
		{"5-1 * * * *", "beginning of range (5) beyond end of range (1): 5-1"},
		{"a * * * *", "failed to parse int from a"},
		{"@every 5m", "unrecognized descriptor: @every 5m"},
		{"@often", "unrecognized descriptor: @often"},
		{"TZ=Nowhere/City * * * * *", "provided bad location Nowhere/City"},
		{"1-2-3 * * * *", "too many hyphens: 1-2-3"},
		{"1/2/3 * * * *", "too many slashes: 1/2/3"},
	} {
		_, err := Parse(tc.spec)
		if !errors.Is(err, ErrSyntax) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%q: err %v, want ErrSyntax saying %q", tc.spec, err, tc.msg)
		}
	}
}

// FuzzParse: no schedule panics, and a parsed schedule's next activation
// is after the start, on a whole minute, and itself a match (its own
// predecessor's next).
func FuzzParse(f *testing.F) {
	for _, s := range []string{"* * * * *", "*/5 1-3 * JAN-MAR mon", "@daily", "0 0 31 2,4 *", "1,2,3/4 * ? * *", "TZ=UTC 0 0 * * *"} {
		f.Add(s, int64(1795000000))
	}
	f.Fuzz(func(t *testing.T, spec string, unix int64) {
		s, err := Parse(spec)
		if err != nil {
			return
		}
		from := time.Unix(unix%(1<<33), 0).UTC()
		next := s.Next(from)
		if next.IsZero() {
			return
		}
		if !next.After(from) || next.Second() != 0 || next.Nanosecond() != 0 {
			t.Fatalf("%q from %s: next %s", spec, from, next)
		}
		if again := s.Next(next.Add(-time.Minute)); !again.Equal(next) {
			t.Fatalf("%q: next after %s is %s, not %s", spec, next.Add(-time.Minute), again, next)
		}
	})
}
