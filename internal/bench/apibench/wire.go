package apibench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"google.golang.org/protobuf/encoding/protowire"
)

// wireClient sends the measured pod requests as client-go puts them on the
// wire — HTTP/2 over TLS on client-go's own http.Client (CA, bearer token,
// user agent), protobuf body, client-go's Accept header and query
// parameters — but checks each answer without decoding it into typed
// objects: the status code, the protobuf envelope, and for lists the number
// of items.
//
// Why: the load generator shares this machine's two cores with the server
// it measures. Through the typed clientset, decoding a 20-pod LIST took
// 875 µs of client CPU against the server's 390 µs, and a create 170 µs
// against 401 µs (2026-11-24, docs/bench/api.md), so the client's own work
// was a large part of what the server's latency waited for. Upstream
// measures the same SLIs inside the server (apiserver_request_duration_
// seconds), where a client's decoding does not count either.
type wireClient struct {
	client *http.Client
	// pods is the URL of all pods ("…/api/v1/pods"); namespaced the prefix
	// of a namespace's pods up to the namespace name ("…/api/v1/namespaces/").
	pods, namespaced string
	// query is what client-go adds to every request's query (timeout= from
	// the rest.Config's Timeout), and accept its Accept header.
	query   url.Values
	accept  string
	encoder runtime.Encoder
	// answers are pooled buffers for reading answers; request bodies are
	// not pooled, since the transport may still read a body after Do
	// returns (a request refused before its body was sent).
	answers sync.Pool // *bytes.Buffer
}

func newWireClient(rc *rest.Config, core rest.Interface) (*wireClient, error) {
	hc, err := rest.HTTPClientFor(rc)
	if err != nil {
		return nil, fmt.Errorf("apibench: http client: %w", err)
	}
	// URLs come from client-go, so a server URL with a path prefix works;
	// the query client-go adds to each is kept apart, for list parameters
	// to join.
	all := core.Get().Resource("pods").URL()
	query := all.Query()
	all.RawQuery = ""
	const placeholder = "ns-placeholder"
	nsPods := core.Get().Namespace(placeholder).Resource("pods").URL()
	nsPods.RawQuery = ""
	namespaced, ok := strings.CutSuffix(nsPods.String(), placeholder+"/pods")
	if !ok {
		return nil, fmt.Errorf("apibench: unexpected namespaced URL %s", nsPods)
	}
	accept := rc.AcceptContentTypes
	if accept == "" {
		accept = protobufType
	}
	return &wireClient{
		client:     hc,
		pods:       all.String(),
		namespaced: namespaced,
		query:      query,
		accept:     accept,
		encoder:    protobuf.NewSerializer(scheme.Scheme, scheme.Scheme),
		answers:    sync.Pool{New: func() any { return new(bytes.Buffer) }},
	}, nil
}

var podKind = corev1.SchemeGroupVersion.WithKind("Pod")

// createPod POSTs p as protobuf and expects 201 Created.
func (w *wireClient) createPod(ctx context.Context, p *corev1.Pod) error {
	p.SetGroupVersionKind(podKind) // the protobuf envelope names the kind from it
	var body bytes.Buffer
	if err := w.encoder.Encode(p, &body); err != nil {
		return fmt.Errorf("encoding pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	target := w.namespaced + url.PathEscape(p.Namespace) + "/pods"
	_, err := w.do(ctx, http.MethodPost, target, w.query, body.Bytes(), http.StatusCreated)
	return err
}

// getPod GETs one pod and expects 200.
func (w *wireClient) getPod(ctx context.Context, ns, name string) error {
	target := w.namespaced + url.PathEscape(ns) + "/pods/" + url.PathEscape(name)
	_, err := w.do(ctx, http.MethodGet, target, w.query, nil, http.StatusOK)
	return err
}

// listPods LISTs pods in ns, or in all namespaces if ns is "", with opts
// encoded as client-go encodes them, and returns how many items the
// answer holds.
func (w *wireClient) listPods(ctx context.Context, ns string, opts metav1.ListOptions) (int, error) {
	target := w.pods
	if ns != "" {
		target = w.namespaced + url.PathEscape(ns) + "/pods"
	}
	q, err := scheme.ParameterCodec.EncodeParameters(&opts, corev1.SchemeGroupVersion)
	if err != nil {
		return 0, fmt.Errorf("encoding list options: %w", err)
	}
	for k, v := range w.query {
		q[k] = v
	}
	return w.do(ctx, http.MethodGet, target, q, nil, http.StatusOK)
}

// do sends one request and reads the whole answer. A status other than
// want is an error carrying the answer's Status message. It returns the
// number of list items in a list answer, 1 for a single object.
func (w *wireClient) do(ctx context.Context, method, target string, query url.Values, body []byte, want int) (int, error) {
	if len(query) > 0 {
		target += "?" + query.Encode()
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return 0, err
	}
	if body != nil {
		req.Header.Set("Content-Type", protobufType)
	}
	req.Header.Set("Accept", w.accept)
	resp, err := w.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	buf := w.answers.Get().(*bytes.Buffer)
	defer w.answers.Put(buf)
	buf.Reset()
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return 0, fmt.Errorf("%s %s: reading the answer: %w", method, target, err)
	}
	if resp.StatusCode != want {
		return 0, fmt.Errorf("%s %s: %s: %s", method, target, resp.Status, statusMessage(buf.Bytes()))
	}
	n, err := countItems(buf.Bytes())
	if err != nil {
		return 0, fmt.Errorf("%s %s: %w", method, target, err)
	}
	return n, nil
}

// protobufMagic starts every Kubernetes protobuf answer.
var protobufMagic = []byte("k8s\x00")

// countItems checks that data is a Kubernetes protobuf envelope
// (runtime.Unknown) and returns how many items its object holds if it is
// a list (field 2 of every *List message), 1 otherwise. It walks the
// message's top-level fields only: no item is decoded.
func countItems(data []byte) (int, error) {
	raw, ok := bytes.CutPrefix(data, protobufMagic)
	if !ok {
		return 0, fmt.Errorf("answer is not protobuf (%d bytes)", len(data))
	}
	var env runtime.Unknown
	if err := env.Unmarshal(raw); err != nil {
		return 0, fmt.Errorf("answer's protobuf envelope: %w", err)
	}
	if !strings.HasSuffix(env.Kind, "List") {
		return 1, nil
	}
	items := 0
	for b := env.Raw; len(b) > 0; {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return 0, fmt.Errorf("%s: %w", env.Kind, protowire.ParseError(n))
		}
		b = b[n:]
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return 0, fmt.Errorf("%s: %w", env.Kind, protowire.ParseError(m))
		}
		b = b[m:]
		if num == 2 && typ == protowire.BytesType {
			items++
		}
	}
	return items, nil
}

// statusMessage is the message of the metav1.Status an error answer
// carries, or a prefix of the raw answer.
func statusMessage(data []byte) string {
	var st metav1.Status
	if raw, ok := bytes.CutPrefix(data, protobufMagic); ok {
		var env runtime.Unknown
		if env.Unmarshal(raw) == nil && st.Unmarshal(env.Raw) == nil {
			return st.Message
		}
	}
	if len(data) > 200 {
		data = data[:200]
	}
	return string(data)
}
