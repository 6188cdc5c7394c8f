package controlplane

import (
	"log/slog"
	"time"
)

// shutdownClock logs when each part of the control plane finished
// stopping, counted from the start of the shutdown: a slow stop (10,000
// watches, a million cached objects) then says which part it waited on.
// Parts stopped before the shutdown began (a failed start) are not logged.
type shutdownClock struct {
	log   *slog.Logger
	start time.Time
}

// begin marks the start of the shutdown.
func (c *shutdownClock) begin() { c.start = time.Now() }

// stop runs stopPart, which stops part, and logs the time since begin.
func (c *shutdownClock) stop(part string, stopPart func()) {
	stopPart()
	if !c.start.IsZero() {
		c.log.Info("stopped", "part", part, "after", time.Since(c.start).Round(time.Millisecond))
	}
}
