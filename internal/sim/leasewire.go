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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// leaseUpdater writes a Lease renewal (an Update with the Lease's
// resourceVersion as precondition) and returns the stored Lease. Errors
// are apimachinery's, so apierrors.IsConflict and IsNotFound work.
type leaseUpdater interface {
	update(ctx context.Context, l *coordv1.Lease) (*coordv1.Lease, error)
}

// typedLeases renews through the clientset: what tests with a fake
// clientset use.
type typedLeases struct{ client kubernetes.Interface }

func (t typedLeases) update(ctx context.Context, l *coordv1.Lease) (*coordv1.Lease, error) {
	return t.client.CoordinationV1().Leases(LeaseNamespace).Update(ctx, l, metav1.UpdateOptions{})
}

// leaseRenewer is the Lease renewal as one HTTP request on client-go's
// http.Client (the same connections, TLS, bearer token and user agent as
// the clientset), without client-go's per-request machinery.
//
// Why: a renewal is ~97% of an idle simulator's requests (10,000 nodes,
// 1,000 per second), and building each one through the typed client —
// URL assembly and cleaning, parameter encoding, retry bookkeeping, request
// hooks, result wrapping — cost an eighth of the simulator's CPU: the
// renewal path took 4.3–4.7 s of CPU per profiled minute, 3.0 s this way
// (docs/bench/sim.md, run 9). The request on the wire is the
// same: PUT of the protobuf Lease to its URL, protobuf or JSON back.
//
// Like client-go, it waits out a 429 or 5xx that carries Retry-After and
// retries, up to maxRetries attempts, and takes a token from the client's
// rate limiter, if there is one, per attempt.
type leaseRenewer struct {
	client *http.Client
	// collection is the URL of kube-node-lease's Leases, ending in "/".
	collection string
	limiter    flowcontrol.RateLimiter
	encoder    runtime.Encoder
	decoder    runtime.Decoder
}

// maxRetries is client-go's default for requests answered with Retry-After.
const maxRetries = 10

// newLeaseRenewer builds a renewer that sends what rc's clientset would,
// over httpClient. The collection URL comes from client-go itself, so a
// server URL with a path prefix works the same.
func newLeaseRenewer(rc *rest.Config, httpClient *http.Client, coordination rest.Interface) (*leaseRenewer, error) {
	const placeholder = "x"
	u := coordination.Put().Namespace(LeaseNamespace).Resource("leases").Name(placeholder).URL()
	collection, ok := strings.CutSuffix(u.String(), "/"+placeholder)
	if !ok {
		return nil, fmt.Errorf("sim: unexpected Lease URL %s", u)
	}
	return &leaseRenewer{
		client:     httpClient,
		collection: collection + "/",
		limiter:    rc.RateLimiter,
		encoder:    protobuf.NewSerializer(scheme.Scheme, scheme.Scheme),
		decoder:    scheme.Codecs.UniversalDeserializer(),
	}, nil
}

var leaseKind = coordv1.SchemeGroupVersion.WithKind("Lease")

// update sets l's TypeMeta (the protobuf envelope names the kind from it).
func (r *leaseRenewer) update(ctx context.Context, l *coordv1.Lease) (*coordv1.Lease, error) {
	l.SetGroupVersionKind(leaseKind)
	var body bytes.Buffer
	if err := r.encoder.Encode(l, &body); err != nil {
		return nil, fmt.Errorf("sim: encoding lease %s: %w", l.Name, err)
	}
	target := r.collection + url.PathEscape(l.Name)
	for attempt := 0; ; attempt++ {
		if r.limiter != nil {
			if err := r.limiter.Wait(ctx); err != nil {
				return nil, err
			}
		}
		code, header, resp, err := r.put(ctx, target, body.Bytes())
		if err != nil {
			return nil, err
		}
		if code >= 200 && code < 300 {
			out := &coordv1.Lease{}
			if _, _, err := r.decoder.Decode(resp, nil, out); err != nil {
				return nil, fmt.Errorf("sim: decoding lease %s from the server: %w", l.Name, err)
			}
			return out, nil
		}
		wait, retry := retryAfter(code, header)
		if !retry || attempt+1 >= maxRetries {
			return nil, r.responseError(code, resp, l.Name)
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (r *leaseRenewer) put(ctx context.Context, target string, body []byte) (int, http.Header, []byte, error) {
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
func (r *leaseRenewer) responseError(code int, body []byte, name string) error {
	var status metav1.Status
	if obj, _, err := r.decoder.Decode(body, nil, &status); err == nil && obj == &status && status.Status == metav1.StatusFailure {
		return &apierrors.StatusError{ErrStatus: status}
	}
	return apierrors.NewGenericServerResponse(code, http.MethodPut, coordv1.Resource("leases"), name, string(body), 0, true)
}
