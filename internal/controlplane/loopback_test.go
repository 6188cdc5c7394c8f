package controlplane

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	authenticationv1 "k8s.io/api/authentication/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/myriad-k8s/myriad/internal/pki"
)

// startWithComponent runs a control plane whose one component, acting as
// id, hands its loopback configuration out and idles; stop shuts it down.
func startWithComponent(tb testing.TB, transport string, id pki.Identity) (rc *rest.Config, stop func()) {
	tb.Helper()
	configs := make(chan *rest.Config, 1)
	comp := Component{Name: "probe", Identity: id, Run: func(ctx context.Context, loopback *rest.Config, _ prometheus.Registerer, _ informers.SharedInformerFactory) error {
		configs <- loopback
		<-ctx.Done()
		return nil
	}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Config{DataDir: tb.TempDir(), SecurePort: freePort(tb), LoopbackTransport: transport, Components: []Component{comp},
			Logger: slog.New(slog.DiscardHandler)}, nil)
	}()
	select {
	case rc = <-configs:
	case err := <-done:
		cancel()
		tb.Fatalf("Run ended early: %v", err)
	case <-time.After(60 * time.Second):
		cancel()
		tb.Fatal("the component did not start")
	}
	return rc, func() {
		cancel()
		if err := <-done; err != nil {
			tb.Errorf("Run: %v", err)
		}
	}
}

// TestLoopbackIsJudgedAsAnyClient: through either loopback transport, a
// component's requests are authenticated as the component, authorized by
// RBAC (what its role lacks is 403) and classified by API Priority and
// Fairness; the in-memory one never touches TLS.
func TestLoopbackIsJudgedAsAnyClient(t *testing.T) {
	for _, transport := range []string{LoopbackMemory, LoopbackTLS} {
		t.Run(transport, func(t *testing.T) {
			rc, stop := startWithComponent(t, transport, pki.Identity{User: pki.SchedulerUser})
			defer stop()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cs, err := kubernetes.NewForConfig(rc)
			if err != nil {
				t.Fatal(err)
			}
			review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := review.Status.UserInfo.Username; got != pki.SchedulerUser {
				t.Errorf("authenticated as %q, want %q", got, pki.SchedulerUser)
			}
			// The scheduler's role grants no Secrets.
			if _, err := cs.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
				t.Errorf("listing secrets as the scheduler: %v, want 403 Forbidden", err)
			}

			hc, err := rest.HTTPClientFor(rc)
			if err != nil {
				t.Fatal(err)
			}
			// Until flow control has read its stored configuration, it
			// classifies by the built-in mandatory objects, which have no
			// UIDs yet, so the headers are empty (as upstream's are): on a
			// loaded machine the first request can come before that.
			var resp *http.Response
			waitFor(t, 20*time.Second, "a list of pods classified by the stored FlowSchemas", func() bool {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, rc.Host+"/api/v1/namespaces/default/pods?limit=1", nil)
				if resp, err = hc.Do(req); err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("listing pods as the scheduler: %d", resp.StatusCode)
				}
				return resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID) != ""
			})
			for _, h := range []string{flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID, flowcontrolv1.ResponseHeaderMatchedPriorityLevelConfigurationUID} {
				if resp.Header.Get(h) == "" {
					t.Errorf("no %s: the request did not pass through flow control", h)
				}
			}
			if inMemory := resp.TLS == nil; inMemory != (transport == LoopbackMemory) {
				t.Errorf("response over TLS = %v with the %s transport", !inMemory, transport)
			}
		})
	}
}

// TestLoopbackTransportValidated: an unknown transport is refused before
// anything starts.
func TestLoopbackTransportValidated(t *testing.T) {
	err := Run(context.Background(), Config{DataDir: t.TempDir(), SecurePort: freePort(t), LoopbackTransport: "carrier-pigeon"}, nil)
	if err == nil || !strings.Contains(err.Error(), `"carrier-pigeon"`) {
		t.Fatalf("Run with an unknown loopback transport = %v, want an error naming it", err)
	}
}
