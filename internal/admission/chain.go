package admission

import (
	"context"
	"fmt"
)

// Chain runs plugins in order, by phase: every MutationInterface in Admit,
// every AllocationInterface in Allocate, every ValidationInterface in
// Validate. A plugin may implement several (upstream's Priority both
// mutates and validates); it runs in each of its phases, at its place in
// the order given to NewChain. A Chain is immutable and safe for
// concurrent use; a nil *Chain admits everything.
type Chain struct {
	mutating   []MutationInterface
	allocating []AllocationInterface
	validating []ValidationInterface
}

// NewChain builds a chain of plugins, each of which must implement at
// least one of the phase interfaces.
func NewChain(plugins ...Interface) (*Chain, error) {
	c := &Chain{}
	for _, p := range plugins {
		found := false
		if m, ok := p.(MutationInterface); ok {
			c.mutating, found = append(c.mutating, m), true
		}
		if al, ok := p.(AllocationInterface); ok {
			c.allocating, found = append(c.allocating, al), true
		}
		if v, ok := p.(ValidationInterface); ok {
			c.validating, found = append(c.validating, v), true
		}
		if !found {
			return nil, fmt.Errorf("admission: plugin %T admits, allocates and validates nothing", p)
		}
	}
	return c, nil
}

// Admit runs the mutating plugins that handle a.Operation, in order, and
// stops at the first refusal.
func (c *Chain) Admit(ctx context.Context, a *Attributes) error {
	if c == nil {
		return nil
	}
	for _, p := range c.mutating {
		if !p.Handles(a.Operation) {
			continue
		}
		if err := p.Admit(ctx, a); err != nil {
			return err
		}
	}
	return nil
}

// Allocate runs the allocating plugins that handle a.Operation, in order.
// When one fails, those before it are finished with false and its error
// is returned; otherwise the caller must call the returned Finish once
// (see AllocationInterface).
func (c *Chain) Allocate(ctx context.Context, a *Attributes) (Finish, error) {
	if c == nil {
		return NoFinish, nil
	}
	var finishes []Finish
	for _, p := range c.allocating {
		if !p.Handles(a.Operation) {
			continue
		}
		f, err := p.Allocate(ctx, a)
		if err != nil {
			for i := len(finishes) - 1; i >= 0; i-- {
				finishes[i](false)
			}
			return nil, err
		}
		finishes = append(finishes, f)
	}
	switch len(finishes) {
	case 0:
		return NoFinish, nil
	case 1:
		return finishes[0], nil
	}
	return func(written bool) {
		for i := len(finishes) - 1; i >= 0; i-- {
			finishes[i](written)
		}
	}, nil
}

// Validate runs the validating plugins that handle a.Operation, in order,
// and stops at the first refusal.
func (c *Chain) Validate(ctx context.Context, a *Attributes) error {
	if c == nil {
		return nil
	}
	for _, p := range c.validating {
		if !p.Handles(a.Operation) {
			continue
		}
		if err := p.Validate(ctx, a); err != nil {
			return err
		}
	}
	return nil
}

// Handler is the Handles half most plugins embed: it handles the
// operations it was made with.
type Handler struct{ ops uint8 }

// NewHandler handles ops.
func NewHandler(ops ...Operation) Handler {
	var h Handler
	for _, op := range ops {
		h.ops |= opBit(op)
	}
	return h
}

// Handles reports whether op is one of h's.
func (h Handler) Handles(op Operation) bool { return h.ops&opBit(op) != 0 }

func opBit(op Operation) uint8 {
	switch op {
	case Create:
		return 1
	case Update:
		return 2
	case Delete:
		return 4
	case Connect:
		return 8
	}
	return 0
}
