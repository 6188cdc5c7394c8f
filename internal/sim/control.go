package sim

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// ControlHandler serves a small HTTP API that fails and recovers nodes of a
// running simulator, for operators (curl) and for harnesses that drive node
// lifecycle from outside the process:
//
//	POST /fail?node=NAME[,NAME...][&node=...]     Fail each node
//	POST /recover?node=NAME[,NAME...][&node=...]  Recover each node
//	GET  /failed                                  the failed nodes, one name a line
//
// A request naming an unknown node changes nothing and gets 404; Recover
// before Start gets 409. Both POSTs answer with the failed nodes afterwards,
// like GET /failed. Mutations are POST only, so a browser or a scraper
// wandering over the listener cannot fail nodes. There is no
// authentication: serve it on a loopback address.
func (s *Sim) ControlHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /fail", func(w http.ResponseWriter, r *http.Request) {
		s.serveControl(w, r, s.Fail)
	})
	mux.HandleFunc("POST /recover", func(w http.ResponseWriter, r *http.Request) {
		s.serveControl(w, r, s.Recover)
	})
	mux.HandleFunc("GET /failed", func(w http.ResponseWriter, _ *http.Request) {
		s.writeFailed(w)
	})
	return mux
}

// serveControl applies op to every node the request names, after checking
// them all, so a typo in a list does not leave it half applied.
func (s *Sim) serveControl(w http.ResponseWriter, r *http.Request, op func(string) error) {
	var names []string
	for _, v := range r.URL.Query()["node"] {
		for _, name := range strings.Split(v, ",") {
			if name = strings.TrimSpace(name); name != "" {
				names = append(names, name)
			}
		}
	}
	if len(names) == 0 {
		http.Error(w, "no node: want ?node=NAME", http.StatusBadRequest)
		return
	}
	for _, name := range names {
		if _, ok := s.byName[name]; !ok {
			http.Error(w, fmt.Sprintf("%v %q", ErrUnknownNode, name), http.StatusNotFound)
			return
		}
	}
	for _, name := range names {
		if err := op(name); err != nil {
			code := http.StatusInternalServerError
			if errors.Is(err, ErrNotStarted) {
				code = http.StatusConflict
			}
			http.Error(w, err.Error(), code)
			return
		}
	}
	s.writeFailed(w)
}

func (s *Sim) writeFailed(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	for _, name := range s.FailedNodes() {
		fmt.Fprintln(w, name)
	}
}
