package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/myriad-k8s/myriad/internal/apiserver/kubeletproxy"
	"github.com/myriad-k8s/myriad/internal/apiserver/request"
	"github.com/myriad-k8s/myriad/internal/kubeletclient"
)

// KubeletConfig is how the server reaches kubelets and pods for the
// connect subresources (pods/log, exec, attach, portforward, proxy;
// services/proxy; nodes/proxy).
type KubeletConfig struct {
	// Client dials kubelets; nil: one with kubeletclient's defaults (no
	// client certificate, the kubelet's certificate unverified — upstream
	// without --kubelet-* flags).
	Client *kubeletclient.Client
	// AllowLoopbackProxy lets the proxy subresources reach loopback
	// addresses (see kubeletproxy.Config.AllowLoopback).
	AllowLoopbackProxy bool
	// ClientUser, when set, is the user of Client's certificate: Start
	// binds it to the default ClusterRole system:kubelet-api-admin
	// (ClusterRoleBinding KubeletClientBinding), so that kubelets that
	// authorize through SubjectAccessReview admit the server, as kubeadm
	// does for its apiserver-kubelet-client. An existing binding of that
	// name is left as it is.
	ClientUser string
}

// KubeletClientBinding is the ClusterRoleBinding ClientUser gets.
const KubeletClientBinding = "myriad:kube-apiserver-kubelet-client"

// bootstrapKubeletClient creates KubeletClientBinding if missing.
func (s *Server) bootstrapKubeletClient(ctx context.Context) error {
	user := s.cfg.Kubelet.ClientUser
	if user == "" {
		return nil
	}
	if _, ok := s.handlers[clusterRoleBindingsGVR]; !ok {
		return nil
	}
	b := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: KubeletClientBinding},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:kubelet-api-admin"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	_, err := serverObjects{s}.Create(ctx, clusterRoleBindingsGVR, b)
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("binding the kubelet client %s: %w", user, err)
	}
	return nil
}

var clusterRoleBindingsGVR = rbacv1.SchemeGroupVersion.WithResource("clusterrolebindings")

var (
	nodesGVR     = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
	endpointsGVR = schema.GroupVersionResource{Version: "v1", Resource: "endpoints"}
)

// installConnect adds the connect subresources to pods, nodes and
// services.
func (s *Server) installConnect() error {
	client := s.cfg.Kubelet.Client
	if client == nil {
		var err error
		if client, err = kubeletclient.New(kubeletclient.Config{}); err != nil {
			return err
		}
	}
	p, err := kubeletproxy.New(kubeletproxy.Config{
		Kubelets:      client,
		Objects:       &connectObjects{s: s},
		WriteError:    s.writeError,
		AllowLoopback: s.cfg.Kubelet.AllowLoopbackProxy,
		Metrics:       s.metrics,
	})
	if err != nil {
		return err
	}
	add := func(gvr schema.GroupVersionResource, sub string, fn subresourceHandler) {
		h, ok := s.handlers[gvr]
		if !ok || !h.res.HasSubresource(sub) {
			return
		}
		if h.hooks.subresources == nil {
			h.hooks.subresources = map[string]subresourceHandler{}
		}
		h.hooks.subresources[sub] = fn
	}
	add(podsGVR, "log", func(_ *Server, w http.ResponseWriter, r *http.Request, _ *resourceHandler, info *request.RequestInfo) {
		p.PodLog(w, r, info.Namespace, info.Name)
	})
	add(podsGVR, "exec", func(_ *Server, w http.ResponseWriter, r *http.Request, _ *resourceHandler, info *request.RequestInfo) {
		p.PodExec(w, r, info.Namespace, info.Name)
	})
	add(podsGVR, "attach", func(_ *Server, w http.ResponseWriter, r *http.Request, _ *resourceHandler, info *request.RequestInfo) {
		p.PodAttach(w, r, info.Namespace, info.Name)
	})
	add(podsGVR, "portforward", func(_ *Server, w http.ResponseWriter, r *http.Request, _ *resourceHandler, info *request.RequestInfo) {
		p.PodPortForward(w, r, info.Namespace, info.Name)
	})
	add(podsGVR, "proxy", func(_ *Server, w http.ResponseWriter, r *http.Request, _ *resourceHandler, info *request.RequestInfo) {
		p.PodProxy(w, r, info.Namespace, info.Name, proxySubpath(info))
	})
	add(servicesGVR, "proxy", func(_ *Server, w http.ResponseWriter, r *http.Request, _ *resourceHandler, info *request.RequestInfo) {
		p.ServiceProxy(w, r, info.Namespace, info.Name, proxySubpath(info))
	})
	add(nodesGVR, "proxy", func(_ *Server, w http.ResponseWriter, r *http.Request, _ *resourceHandler, info *request.RequestInfo) {
		p.NodeProxy(w, r, info.Name, proxySubpath(info))
	})
	return nil
}

// proxySubpath is the path below .../proxy, with a leading slash when not
// empty and the request's trailing slash kept, as upstream's connect
// handler passes it.
func proxySubpath(info *request.RequestInfo) string {
	if len(info.Parts) <= 3 {
		if strings.HasSuffix(info.Path, "/proxy/") {
			return "/"
		}
		return ""
	}
	p := "/" + strings.Join(info.Parts[3:], "/")
	if strings.HasSuffix(info.Path, "/") {
		p += "/"
	}
	return p
}

// connectObjects reads what the connect subresources need from the
// watch caches: the latest state is what a stream should go to, and a
// consistent read would cost a store round trip per exec.
type connectObjects struct {
	s *Server
	// nodes keeps decoded Nodes between requests, valid while the cache
	// holds the same revision: a Node with its image list is kilobytes to
	// decode, and every log or exec on it reads it (the memo is the
	// namespaces', which works for any cluster-scoped resource).
	nodes namespaceMemo
}

func (o *connectObjects) Pod(ctx context.Context, ns, name string) (*corev1.Pod, error) {
	obj, err := o.s.GetObject(ctx, podsGVR, ns, name, "0")
	if err != nil {
		return nil, err
	}
	return obj.(*corev1.Pod), nil
}

func (o *connectObjects) Node(ctx context.Context, name string) (*corev1.Node, error) {
	h, ok := o.s.handlers[nodesGVR]
	if !ok {
		return nil, fmt.Errorf("apiserver: %s is not served", nodesGVR)
	}
	obj, err := o.nodes.get(ctx, h, name)
	if err != nil {
		return nil, h.cacheError(err, name)
	}
	return obj.(*corev1.Node), nil
}

func (o *connectObjects) Service(ctx context.Context, ns, name string) (*corev1.Service, error) {
	obj, err := o.s.GetObject(ctx, servicesGVR, ns, name, "0")
	if err != nil {
		return nil, err
	}
	return obj.(*corev1.Service), nil
}

func (o *connectObjects) Endpoints(ctx context.Context, ns, name string) (*corev1.Endpoints, error) {
	obj, err := o.s.GetObject(ctx, endpointsGVR, ns, name, "0")
	if err != nil {
		return nil, err
	}
	return obj.(*corev1.Endpoints), nil
}
