package cache

import (
	"testing"
	"time"
)

func TestWindowAdaptiveSizing(t *testing.T) {
	t0 := time.Unix(0, 0)
	keep := 75 * time.Second
	w := newWindow(4, 64, keep, 100)
	rev := int64(100)
	add := func(at time.Time) {
		rev++
		w.add(&winEvent{key: "k", rev: rev, at: at}, at)
	}
	// High churn: 40 events within one second all stay (the ring grows).
	for i := range 40 {
		add(t0.Add(time.Duration(i) * 25 * time.Millisecond))
	}
	if w.len() != 40 || w.startRev != 100 {
		t.Fatalf("burst: len %d startRev %d, want 40 and 100", w.len(), w.startRev)
	}
	// Never above max, whatever the churn.
	for range 100 {
		add(t0.Add(time.Second))
	}
	if w.len() != 64 || len(w.buf) != 64 || w.startRev != rev-64 {
		t.Fatalf("max: len %d cap %d startRev %d", w.len(), len(w.buf), w.startRev)
	}
	// Quiet: old events expire down to min and the ring shrinks.
	later := t0.Add(keep + 2*time.Second)
	add(later)
	w.trim(later)
	w.trim(later)
	w.trim(later)
	if w.len() != 4 || len(w.buf) > 16 {
		t.Fatalf("trim: len %d cap %d", w.len(), len(w.buf))
	}
	if got := w.since(w.startRev, nil); len(got) != 4 || got[3].rev != rev {
		t.Fatalf("since startRev: %d events", len(got))
	}
	// Slow churn into a full ring of old events: drop rather than grow.
	w2 := newWindow(2, 64, keep, 0)
	w2.add(&winEvent{rev: 1, at: t0}, t0)
	w2.add(&winEvent{rev: 2, at: t0}, t0)
	w2.add(&winEvent{rev: 3, at: later}, later)
	if len(w2.buf) != 2 || w2.startRev != 1 {
		t.Fatalf("slow churn: cap %d startRev %d", len(w2.buf), w2.startRev)
	}
}

func TestWindowUndo(t *testing.T) {
	w := newWindow(8, 8, time.Minute, 0)
	a1 := &entry{key: "a", rev: 1}
	a3 := &entry{key: "a", rev: 3}
	b2 := &entry{key: "b", rev: 2}
	now := time.Unix(0, 0)
	w.add(&winEvent{key: "a", cur: a1, rev: 1, at: now}, now)
	w.add(&winEvent{key: "b", cur: b2, rev: 2, at: now}, now)
	w.add(&winEvent{key: "a", cur: a3, prev: a1, rev: 3, at: now}, now)
	w.add(&winEvent{key: "b", prev: b2, rev: 4, at: now}, now)
	ov := w.undo(1)
	if len(ov) != 2 || ov[0].key != "a" || ov[0].e != a1 || ov[1].key != "b" || ov[1].e != nil {
		t.Fatalf("undo(1) = %+v", ov)
	}
	if ov := w.undo(4); ov != nil {
		t.Fatalf("undo(newest) = %+v", ov)
	}
}
