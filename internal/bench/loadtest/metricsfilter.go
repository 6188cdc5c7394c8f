package loadtest

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strconv"
)

// scrapedFamilies are the metric families ParseMetrics reads. An API
// server's /metrics is hundreds of KB (histograms of every verb and
// resource); the harness reads it every second, and parsing all of it
// was about a tenth of the bench process's CPU in a density run, on the
// cores the server under test shares.
var scrapedFamilies = map[string]bool{
	"apiserver_request_total":             true,
	"process_cpu_seconds_total":           true,
	"process_resident_memory_bytes":       true,
	"go_memstats_heap_inuse_bytes":        true,
	"process_start_time_seconds":          true,
	"apiserver_longrunning_requests":      true,
	"apiserver_current_inflight_requests": true,
}

// keepFamilies copies the text exposition in r with only keep's families:
// their samples and their HELP and TYPE lines. Other well-formed sample
// lines and every other comment are dropped; a line that is neither is
// kept, so that the parser still rejects what is not metrics at all.
func keepFamilies(r io.Reader, keep map[string]bool) ([]byte, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var out bytes.Buffer
	for {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			// A line longer than the buffer: gather it whole.
			long := append([]byte(nil), line...)
			for err == bufio.ErrBufferFull {
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if len(line) > 0 && keepLine(line, keep) {
			out.Write(line)
		}
		if err == io.EOF {
			return out.Bytes(), nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading metrics: %w", err)
		}
	}
}

func keepLine(line []byte, keep map[string]bool) bool {
	if line[0] == '#' {
		// "# HELP name ..." or "# TYPE name ...": the family's own.
		f := bytes.Fields(line)
		return len(f) >= 3 && (string(f[1]) == "HELP" || string(f[1]) == "TYPE") && keep[string(f[2])]
	}
	end := bytes.IndexAny(line, "{ \t\n")
	if end <= 0 {
		return len(bytes.TrimSpace(line)) > 0 // blank lines go; garbage stays
	}
	if keep[string(line[:end])] {
		return true
	}
	return !wellFormedSample(line[end:])
}

// wellFormedSample reports whether rest (a sample line after its metric
// name) is optional labels, then a value and optionally a timestamp.
func wellFormedSample(rest []byte) bool {
	if rest[0] == '{' {
		i := bytes.LastIndexByte(rest, '}')
		if i < 0 {
			return false
		}
		rest = rest[i+1:]
	}
	f := bytes.Fields(rest)
	if len(f) < 1 || len(f) > 2 {
		return false
	}
	if _, err := strconv.ParseFloat(string(f[0]), 64); err != nil {
		return false
	}
	if len(f) == 2 {
		if _, err := strconv.ParseInt(string(f[1]), 10, 64); err != nil {
			return false
		}
	}
	return true
}
