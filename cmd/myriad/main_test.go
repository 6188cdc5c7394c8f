package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"testing"
)

// TestHelp runs every command's -h: each defines its flags without a
// clash (a flag defined twice panics) and prints them.
func TestHelp(t *testing.T) {
	for _, c := range commands() {
		if c.name == "bench" || c.name == "version" {
			continue // subcommands of their own; no flag set at this level
		}
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			err := c.run(context.Background(), []string{"-h"}, &out)
			if !errors.Is(err, flag.ErrHelp) {
				t.Fatalf("%s -h: %v, want flag.ErrHelp", c.name, err)
			}
		})
	}
}
