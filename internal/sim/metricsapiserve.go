package sim

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregatorclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
)

// MetricsAPIService configures RegisterMetricsAPI: the simulator's
// metrics API made a real metrics.k8s.io/v1beta1 APIService, as
// metrics-server's manifests make theirs, so `kubectl top` and the HPA
// controller read it through the API server's aggregation layer.
type MetricsAPIService struct {
	// Namespace and Name of the Service (default kube-system/metrics-server,
	// metrics-server's).
	Namespace, Name string
	// Listen is where the metrics API listens (host:port); the
	// EndpointSlice names its IP (loopback when unspecified) and port.
	// Requests must carry a client certificate from the front-proxy CA
	// the cluster publishes in kube-system/extension-apiserver-authentication,
	// with a common name it allows, as an extension API server's
	// delegated authentication requires.
	Listen string
}

// MetricsAPIServer is the metrics API served over TLS behind the
// aggregation layer.
type MetricsAPIServer struct {
	srv      *http.Server
	listener net.Listener
	client   kubernetes.Interface
	agg      aggregatorclient.Interface
	cfg      MetricsAPIService
}

// metricsAPIServiceName is the APIService metrics-server registers.
var metricsAPIServiceName = metricsv1beta1.SchemeGroupVersion.Version + "." + metricsGroup

// RegisterMetricsAPI serves s's metrics API over TLS on cfg.Listen with
// a self-signed certificate for the Service's DNS name, accepts only
// requests the API server's front proxy makes, and creates (or updates)
// the Service, its EndpointSlice and the APIService
// v1beta1.metrics.k8s.io whose caBundle verifies that certificate. Close
// stops serving and deletes the EndpointSlice, so the APIService turns
// unavailable (as when metrics-server's pods go away).
func (s *Sim) RegisterMetricsAPI(ctx context.Context, rc *rest.Config, cfg MetricsAPIService) (*MetricsAPIServer, error) {
	if cfg.Namespace == "" {
		cfg.Namespace = metav1.NamespaceSystem
	}
	if cfg.Name == "" {
		cfg.Name = "metrics-server"
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	agg, err := aggregatorclient.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	clientCAs, allowed, err := frontProxyTrust(ctx, client)
	if err != nil {
		return nil, err
	}
	caPEM, cert, err := selfSignedServing(cfg.Name + "." + cfg.Namespace + ".svc")
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("metrics API: %w", err)
	}
	m := &MetricsAPIServer{listener: l, client: client, agg: agg, cfg: cfg}
	m.srv = &http.Server{
		Handler:           requireFrontProxy(allowed, s.MetricsAPIHandler()),
		ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert},
			ClientAuth: tls.VerifyClientCertIfGiven, ClientCAs: clientCAs},
	}
	go func() { _ = m.srv.ServeTLS(l, "", "") }()
	if err := m.register(ctx, caPEM); err != nil {
		_ = m.srv.Close()
		return nil, err
	}
	return m, nil
}

// Addr is where the metrics API listens.
func (m *MetricsAPIServer) Addr() net.Addr { return m.listener.Addr() }

// Close stops serving and withdraws the endpoint.
func (m *MetricsAPIServer) Close(ctx context.Context) error {
	err := m.srv.Close()
	if derr := m.client.DiscoveryV1().EndpointSlices(m.cfg.Namespace).Delete(ctx, m.cfg.Name, metav1.DeleteOptions{}); derr != nil && !apierrors.IsNotFound(derr) {
		err = errors.Join(err, derr)
	}
	return err
}

// frontProxyTrust reads the front-proxy CA and allowed names from
// kube-system/extension-apiserver-authentication.
func frontProxyTrust(ctx context.Context, client kubernetes.Interface) (*x509.CertPool, []string, error) {
	cm, err := client.CoreV1().ConfigMaps(metav1.NamespaceSystem).Get(ctx, "extension-apiserver-authentication", metav1.GetOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("metrics API: reading the front-proxy trust: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(cm.Data["requestheader-client-ca-file"])) {
		return nil, nil, errors.New("metrics API: extension-apiserver-authentication has no requestheader-client-ca-file")
	}
	var allowed []string
	if v := cm.Data["requestheader-allowed-names"]; v != "" {
		if err := json.Unmarshal([]byte(v), &allowed); err != nil {
			return nil, nil, fmt.Errorf("metrics API: requestheader-allowed-names: %w", err)
		}
	}
	return pool, allowed, nil
}

// requireFrontProxy admits requests whose verified client certificate
// has an allowed common name (any, when none are listed), as
// k8s.io/apiserver's request-header authenticator; others get 401.
func requireFrontProxy(allowed []string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 ||
			(len(allowed) > 0 && !slices.Contains(allowed, r.TLS.VerifiedChains[0][0].Subject.CommonName)) || r.Header.Get("X-Remote-User") == "" {
			writeJSON(w, http.StatusUnauthorized, &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
				Status: metav1.StatusFailure, Message: "Unauthorized", Reason: metav1.StatusReasonUnauthorized, Code: http.StatusUnauthorized})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// selfSignedServing makes a CA and a serving certificate for dnsName,
// valid a year, as metrics-server's self-signed default.
func selfSignedServing(dnsName string) ([]byte, tls.Certificate, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(now.UnixNano()), Subject: pkix.Name{CommonName: "myriad-sim-metrics-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(365 * 24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(now.UnixNano() + 1), Subject: pkix.Name{CommonName: dnsName}, DNSNames: []string{dnsName},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(365 * 24 * time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// register creates or updates the Service, the EndpointSlice and the
// APIService.
func (m *MetricsAPIServer) register(ctx context.Context, caPEM []byte) error {
	ap, err := netip.ParseAddrPort(m.listener.Addr().String())
	if err != nil {
		return fmt.Errorf("metrics API: listener address: %w", err)
	}
	ip := ap.Addr()
	if ip.IsUnspecified() {
		ip = netip.MustParseAddr("127.0.0.1")
	}
	port := int32(ap.Port())
	ns, name := m.cfg.Namespace, m.cfg.Name
	labels := map[string]string{"app.kubernetes.io/name": "metrics-server", "app.kubernetes.io/managed-by": "myriad-sim"}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "https", Port: 443, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(port)}}}}
	if cur, err := m.client.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		if _, err := m.client.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("metrics API: creating service %s/%s: %w", ns, name, err)
		}
	} else if err != nil {
		return fmt.Errorf("metrics API: reading service %s/%s: %w", ns, name, err)
	} else {
		cur.Spec.Ports = svc.Spec.Ports
		if _, err := m.client.CoreV1().Services(ns).Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("metrics API: updating service %s/%s: %w", ns, name, err)
		}
	}
	addrType := discoveryv1.AddressTypeIPv4
	if ip.Is6() {
		addrType = discoveryv1.AddressTypeIPv6
	}
	portName, ready := "https", true
	sliceLabels := map[string]string{discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: "myriad-sim"}
	slice := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: sliceLabels}, AddressType: addrType,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{ip.String()}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
		Ports:     []discoveryv1.EndpointPort{{Name: &portName, Port: &port}}}
	if cur, err := m.client.DiscoveryV1().EndpointSlices(ns).Get(ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		if _, err := m.client.DiscoveryV1().EndpointSlices(ns).Create(ctx, slice, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("metrics API: creating endpointslice %s/%s: %w", ns, name, err)
		}
	} else if err != nil {
		return fmt.Errorf("metrics API: reading endpointslice %s/%s: %w", ns, name, err)
	} else {
		cur.AddressType, cur.Endpoints, cur.Ports = slice.AddressType, slice.Endpoints, slice.Ports
		if _, err := m.client.DiscoveryV1().EndpointSlices(ns).Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("metrics API: updating endpointslice %s/%s: %w", ns, name, err)
		}
	}
	if err := m.ensureReaderRole(ctx, labels); err != nil {
		return err
	}
	svcPort := int32(443)
	spec := apiregistrationv1.APIServiceSpec{Group: metricsGroup, Version: metricsv1beta1.SchemeGroupVersion.Version,
		GroupPriorityMinimum: 100, VersionPriority: 100, CABundle: caPEM,
		Service: &apiregistrationv1.ServiceReference{Namespace: ns, Name: name, Port: &svcPort}}
	apis := m.agg.ApiregistrationV1().APIServices()
	if cur, err := apis.Get(ctx, metricsAPIServiceName, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		_, err = apis.Create(ctx, &apiregistrationv1.APIService{ObjectMeta: metav1.ObjectMeta{Name: metricsAPIServiceName, Labels: labels}, Spec: spec}, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("metrics API: creating APIService %s: %w", metricsAPIServiceName, err)
		}
	} else if err != nil {
		return fmt.Errorf("metrics API: reading APIService %s: %w", metricsAPIServiceName, err)
	} else {
		cur.Spec = spec
		if _, err := apis.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("metrics API: updating APIService %s: %w", metricsAPIServiceName, err)
		}
	}
	return nil
}

// ensureReaderRole creates metrics-server's system:aggregated-metrics-reader
// ClusterRole, which the view, edit and admin roles aggregate, so users
// who may view a namespace may also `kubectl top` it.
func (m *MetricsAPIServer) ensureReaderRole(ctx context.Context, labels map[string]string) error {
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "system:aggregated-metrics-reader", Labels: map[string]string{
			"rbac.authorization.k8s.io/aggregate-to-admin": "true",
			"rbac.authorization.k8s.io/aggregate-to-edit":  "true",
			"rbac.authorization.k8s.io/aggregate-to-view":  "true",
		}},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{metricsGroup}, Resources: []string{"pods", "nodes"}, Verbs: []string{"get", "list", "watch"}}},
	}
	for k, v := range labels {
		role.Labels[k] = v
	}
	_, err := m.client.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("metrics API: creating ClusterRole %s: %w", role.Name, err)
	}
	return nil
}
