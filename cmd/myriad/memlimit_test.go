package main

import (
	"flag"
	"io"
	"math"
	"runtime/debug"
	"testing"
)

func TestMemoryLimitFlag(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1)) // restore
	tests := []struct {
		arg     string
		want    int64 // limit after apply; -1: unchanged
		wantErr bool
	}{
		{"", -1, false},
		{"2800Mi", 2800 << 20, false},
		{"3Gi", 3 << 30, false},
		{"0", 0, true},
		{"-1Gi", 0, true},
		{"lots", 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.arg, func(t *testing.T) {
			debug.SetMemoryLimit(math.MaxInt64)
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			apply := memoryLimitFlag(fs)
			if err := fs.Parse([]string{"--memory-limit=" + tc.arg}); err != nil {
				t.Fatal(err)
			}
			err := apply()
			if (err != nil) != tc.wantErr {
				t.Fatalf("apply: %v, want error %v", err, tc.wantErr)
			}
			want := tc.want
			if want == -1 || tc.wantErr {
				want = math.MaxInt64
			}
			if got := debug.SetMemoryLimit(-1); got != want {
				t.Errorf("limit %d, want %d", got, want)
			}
		})
	}
}
