package sim

import (
	"context"
	"time"
)

// planNodes are the nodes Config.Fail names, in index order for a Count.
func (s *Sim) planNodes() []*node {
	p := s.cfg.Fail
	if p.Count > 0 {
		return s.nodes[:p.Count]
	}
	out := make([]*node, 0, len(p.Nodes))
	for _, name := range p.Nodes {
		out = append(out, s.byName[name]) // newSim checked every name
	}
	return out
}

// scheduleFailPlan puts Config.Fail on the heartbeat scheduler, once every
// node is registered. The scheduler rather than a timer goroutine, so the
// plan runs on the simulator's clock, is dropped by Stop like any other
// pending work, and tests can wait for it like for a renewal. Failing or
// recovering even thousands of nodes is a few milliseconds of bookkeeping
// (the writes a recovery triggers are scheduled, not made, here), short
// enough not to hold up renewals.
func (s *Sim) scheduleFailPlan(ctx context.Context) {
	nodes := s.planNodes()
	if len(nodes) == 0 {
		return
	}
	p := s.cfg.Fail
	s.heartbeats.at(s.cfg.Clock.Now().Add(p.After), func(time.Time) {
		if ctx.Err() != nil {
			return
		}
		for _, n := range nodes {
			n.fail()
		}
		s.cfg.Logger.Info("failed hollow nodes as planned", "nodes", len(nodes), "first", nodes[0].name, "recoverAfter", p.RecoverAfter)
		if p.RecoverAfter <= 0 {
			return
		}
		s.heartbeats.at(s.cfg.Clock.Now().Add(p.RecoverAfter), func(time.Time) {
			if ctx.Err() != nil {
				return
			}
			for _, n := range nodes {
				n.recover(ctx)
			}
			s.cfg.Logger.Info("recovered hollow nodes as planned", "nodes", len(nodes), "first", nodes[0].name)
		})
	})
}
