package sim

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// heartbeatWriter writes a node's two periodic updates, a Lease renewal
// and a Node status update, each an Update with the object's
// resourceVersion as precondition, and returns what was stored. Errors are
// apimachinery's, so apierrors.IsConflict and IsNotFound work.
type heartbeatWriter interface {
	updateLease(ctx context.Context, l *coordv1.Lease) (*coordv1.Lease, error)
	updateNodeStatus(ctx context.Context, n *corev1.Node) (*corev1.Node, error)
}

// typedHeartbeats writes through the clientset: what tests with a fake
// clientset use.
type typedHeartbeats struct{ client kubernetes.Interface }

func (t typedHeartbeats) updateLease(ctx context.Context, l *coordv1.Lease) (*coordv1.Lease, error) {
	return t.client.CoordinationV1().Leases(LeaseNamespace).Update(ctx, l, metav1.UpdateOptions{})
}

func (t typedHeartbeats) updateNodeStatus(ctx context.Context, n *corev1.Node) (*corev1.Node, error) {
	return t.client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
}

// wireHeartbeats sends each heartbeat as one HTTP request on client-go's
// http.Client (the same TLS, bearer token and user agent as the
// clientset), without client-go's per-request machinery.
//
// Why: Lease renewals and Node status updates are nearly all of an idle
// simulator's requests (10,000 nodes: 1,000 renewals and 167 status
// updates a second), and building each one through the typed client —
// URL assembly and cleaning, parameter encoding, retry bookkeeping, request
// hooks, result wrapping — cost an eighth of the simulator's CPU: the
// renewal path took 4.3–4.7 s of CPU per profiled minute, 3.0 s this way
// (docs/bench/sim.md, run 9). The request on the wire is the same: PUT of
// the protobuf object to its URL, protobuf or JSON back.
//
// Like client-go, it waits out a 429 or 5xx that carries Retry-After and
// retries, up to maxRetries attempts, and takes a token from the client's
// rate limiter, if there is one, per attempt.
type wireHeartbeats struct {
	client *http.Client
	// leases and nodes are the collection URLs of kube-node-lease's Leases
	// and of Nodes, each ending in "/".
	leases, nodes string
	limiter       flowcontrol.RateLimiter
	encoder       runtime.Encoder
	decoder       runtime.Decoder
}

// maxRetries is client-go's default for requests answered with Retry-After.
const maxRetries = 10

// newWireHeartbeats builds a writer that sends what rc's clientset would,
// over httpClient. The collection URLs come from client-go itself, so a
// server URL with a path prefix works the same.
func newWireHeartbeats(rc *rest.Config, httpClient *http.Client, client kubernetes.Interface) (*wireHeartbeats, error) {
	leases, err := collectionURL(client.CoordinationV1().RESTClient().Put().Namespace(LeaseNamespace).Resource("leases"))
	if err != nil {
		return nil, err
	}
	nodes, err := collectionURL(client.CoreV1().RESTClient().Put().Resource("nodes"))
	if err != nil {
		return nil, err
	}
	return &wireHeartbeats{
		client:  httpClient,
		leases:  leases,
		nodes:   nodes,
		limiter: rc.RateLimiter,
		encoder: protobuf.NewSerializer(scheme.Scheme, scheme.Scheme),
		decoder: scheme.Codecs.UniversalDeserializer(),
	}, nil
}

// collectionURL is the URL of req's collection, ending in "/".
func collectionURL(req *rest.Request) (string, error) {
	const placeholder = "x"
	u := req.Name(placeholder).URL()
	collection, ok := strings.CutSuffix(u.String(), "/"+placeholder)
	if !ok {
		return "", fmt.Errorf("sim: unexpected object URL %s", u)
	}
	return collection + "/", nil
}

var (
	leaseKind = coordv1.SchemeGroupVersion.WithKind("Lease")
	nodeKind  = corev1.SchemeGroupVersion.WithKind("Node")
)

// updateLease sets l's TypeMeta (the protobuf envelope names the kind from
// it).
func (r *wireHeartbeats) updateLease(ctx context.Context, l *coordv1.Lease) (*coordv1.Lease, error) {
	l.SetGroupVersionKind(leaseKind)
	out := &coordv1.Lease{}
	target := r.leases + url.PathEscape(l.Name)
	if err := r.update(ctx, target, l, out, coordv1.Resource("leases"), l.Name); err != nil {
		return nil, err
	}
	return out, nil
}

// updateNodeStatus sets n's TypeMeta, as updateLease.
func (r *wireHeartbeats) updateNodeStatus(ctx context.Context, n *corev1.Node) (*corev1.Node, error) {
	n.SetGroupVersionKind(nodeKind)
	out := &corev1.Node{}
	target := r.nodes + url.PathEscape(n.Name) + "/status"
	if err := r.update(ctx, target, n, out, corev1.Resource("nodes"), n.Name); err != nil {
		return nil, err
	}
	return out, nil
}

// update PUTs in to target and decodes the stored object into out.
func (r *wireHeartbeats) update(ctx context.Context, target string, in, out runtime.Object, gr schema.GroupResource, name string) error {
	var body bytes.Buffer
	if err := r.encoder.Encode(in, &body); err != nil {
		return fmt.Errorf("sim: encoding %s %s: %w", gr, name, err)
	}
	for attempt := 0; ; attempt++ {
		if r.limiter != nil {
			if err := r.limiter.Wait(ctx); err != nil {
				return err
			}
		}
		code, header, resp, err := r.put(ctx, target, body.Bytes())
		if err != nil {
			return err
		}
		if code >= 200 && code < 300 {
			if _, _, err := r.decoder.Decode(resp, nil, out); err != nil {
				return fmt.Errorf("sim: decoding %s %s from the server: %w", gr, name, err)
			}
			return nil
		}
		wait, retry := retryAfter(code, header)
		if !retry || attempt+1 >= maxRetries {
			return r.responseError(code, resp, gr, name)
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (r *wireHeartbeats) put(ctx context.Context, target string, body []byte) (int, http.Header, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, target, bytes.NewReader(body))
	if err != nil {
		return 0, nil, nil, err
	}
	req.Header.Set("Content-Type", runtime.ContentTypeProtobuf)
	req.Header.Set("Accept", runtime.ContentTypeProtobuf+", "+runtime.ContentTypeJSON)
	resp, err := r.client.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	// A Lease or a Status is a few hundred bytes; anything near 1 MiB is
	// not one of them.
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return 0, nil, nil, fmt.Errorf("sim: reading the response to PUT %s: %w", target, err)
	}
	return resp.StatusCode, resp.Header, data, nil
}

// retryAfter says whether a response asks to be retried, and after how
// long: a 429 or 5xx carrying Retry-After in seconds, as client-go decides
// (without the header it does not retry either).
func retryAfter(code int, h http.Header) (time.Duration, bool) {
	if code != http.StatusTooManyRequests && code < 500 {
		return 0, false
	}
	secs, err := strconv.Atoi(h.Get("Retry-After"))
	if err != nil || secs < 0 {
		return 0, false
	}
	return time.Duration(secs) * time.Second, true
}

// responseError turns an error response into the error the typed client
// returns: the server's Status when it sent one, else a generic one for
// the code.
func (r *wireHeartbeats) responseError(code int, body []byte, gr schema.GroupResource, name string) error {
	var status metav1.Status
	if obj, _, err := r.decoder.Decode(body, nil, &status); err == nil && obj == &status && status.Status == metav1.StatusFailure {
		return &apierrors.StatusError{ErrStatus: status}
	}
	return apierrors.NewGenericServerResponse(code, http.MethodPut, gr, name, string(body), 0, true)
}
