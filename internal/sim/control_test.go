package sim

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The steps run in order against one simulator: each sees what the ones
// before it did.
func TestControlHandler(t *testing.T) {
	ts := newTestSim(t, 3, nil)
	ts.run(t)
	h := ts.ControlHandler()
	steps := []struct {
		name, method, target string
		wantCode             int
		wantBody             string // exact for 200, a substring otherwise
	}{
		{"none failed", "GET", "/failed", 200, ""},
		{"fail one", "POST", "/fail?node=hollow-node-1", 200, "hollow-node-1\n"},
		{"fail a list", "POST", "/fail?node=hollow-node-0,hollow-node-2", 200, "hollow-node-0\nhollow-node-1\nhollow-node-2\n"},
		{"recover repeated params", "POST", "/recover?node=hollow-node-0&node=hollow-node-2", 200, "hollow-node-1\n"},
		{"unknown node changes nothing", "POST", "/fail?node=hollow-node-0,nope", 404, `unknown node "nope"`},
		{"still one failed", "GET", "/failed", 200, "hollow-node-1\n"},
		{"no node", "POST", "/fail", 400, "no node"},
		{"GET cannot fail", "GET", "/fail?node=hollow-node-0", 405, ""},
		{"unknown path", "POST", "/explode", 404, ""},
		{"recover the last", "POST", "/recover?node=hollow-node-1", 200, ""},
	}
	for _, st := range steps {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(st.method, st.target, nil))
		body := rec.Body.String()
		if rec.Code != st.wantCode || (st.wantCode == 200 && body != st.wantBody) || !strings.Contains(body, st.wantBody) {
			t.Errorf("%s: %s %s = %d %q, want %d %q", st.name, st.method, st.target, rec.Code, body, st.wantCode, st.wantBody)
		}
	}
	ts.settle(t)
	if got := ts.Stats().Failed; got != 0 {
		t.Errorf("Stats.Failed = %d after recovering every node, want 0", got)
	}
}

func TestControlHandlerRecoverBeforeStart(t *testing.T) {
	ts := newTestSim(t, 1, nil)
	rec := httptest.NewRecorder()
	ts.ControlHandler().ServeHTTP(rec, httptest.NewRequest("POST", "/recover?node=hollow-node-0", nil))
	if rec.Code != http.StatusConflict {
		t.Errorf("recover before Start: %d %q, want 409", rec.Code, rec.Body.String())
	}
}
