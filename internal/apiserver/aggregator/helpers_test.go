package aggregator_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

var schemaGV = schema.GroupVersion{Group: group, Version: version}

func clientNegotiator() runtime.NegotiatedSerializer { return scheme.Codecs.WithoutConversion() }

func httpClient(t testing.TB, s *server) *http.Client {
	t.Helper()
	c, err := rest.HTTPClientFor(s.rest)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// rawGet GETs path as the admin and returns the status and body.
func rawGet(t testing.TB, s *server, path string) (int, string) {
	t.Helper()
	resp, err := httpClient(t, s).Get(s.rest.Host + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// metricValue is the value of the /metrics sample whose name and labels
// are series, or "".
func metricValue(t testing.TB, s *server, series string) string {
	t.Helper()
	_, text := rawGet(t, s, "/metrics")
	for _, line := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			return v
		}
	}
	return ""
}
