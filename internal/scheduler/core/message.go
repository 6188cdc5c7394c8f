package core

import (
	"fmt"
	"sort"
	"strings"
)

// failureMessage builds upstream's FitError message: "0/N nodes are
// available: 2 Insufficient cpu, 1 node(s) had untolerated taint {k: v}."
func failureMessage(res *searchResult) string {
	if res.preFilter != nil {
		return fmt.Sprintf("0/%d nodes are available: %s.", res.numNodes, strings.Join(res.preFilter.Reasons, ", "))
	}
	if res.numNodes == 0 {
		return "0/0 nodes are available: no nodes available to schedule pods."
	}
	counts := map[string]int{}
	for _, st := range res.failed {
		for _, r := range st.Reasons {
			counts[r]++
		}
	}
	return summarize(res.numNodes, counts)
}

// summarize renders reason counts as upstream does: "count reason" strings
// sorted, comma-joined.
func summarize(numNodes int, counts map[string]int) string {
	parts := make([]string, 0, len(counts))
	for r, c := range counts {
		parts = append(parts, fmt.Sprintf("%d %s", c, r))
	}
	sort.Strings(parts)
	return fmt.Sprintf("0/%d nodes are available: %s.", numNodes, strings.Join(parts, ", "))
}
