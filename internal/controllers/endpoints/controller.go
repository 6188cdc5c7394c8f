package endpoints

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/myriad-k8s/myriad/internal/controllers/controllerctx"
	"github.com/myriad-k8s/myriad/internal/controllers/endpointutil"
	"github.com/myriad-k8s/myriad/internal/controllers/reconcile"
)

// Name is the controller's name in --controllers (upstream's).
const Name = "endpoint"

const (
	// MaxAddresses is upstream's cap on addresses in one Endpoints.
	MaxAddresses = 1000
	// OverCapacityAnnotation marks a truncated Endpoints.
	OverCapacityAnnotation = "endpoints.kubernetes.io/over-capacity"
)

// Descriptor registers the controller with the manager.
func Descriptor() controllerctx.Descriptor {
	return controllerctx.Describe(Name, 5, New)
}

// Controller keeps Endpoints for selector Services.
type Controller struct {
	reconcile.Base
	services  corelisters.ServiceLister
	pods      corelisters.PodLister
	endpoints corelisters.EndpointsLister
}

// New registers handlers on the Service, Pod and Endpoints informers.
func New(c *controllerctx.Context) (*Controller, error) {
	svcInf := c.Informers.Core().V1().Services()
	podInf := c.Informers.Core().V1().Pods()
	epInf := c.Informers.Core().V1().Endpoints()
	ctrl := &Controller{
		services:  svcInf.Lister(),
		pods:      podInf.Lister(),
		endpoints: epInf.Lister(),
	}
	ctrl.Base = reconcile.NewBase(c, Name, ctrl.sync, reconcile.Options[string]{})
	ctrl.Synced = []cache.InformerSynced{svcInf.Informer().HasSynced, podInf.Informer().HasSynced, epInf.Informer().HasSynced}
	add := func(key string) { ctrl.Queue.Add(key) }
	if _, err := svcInf.Informer().AddEventHandler(endpointutil.ServiceHandler(add)); err != nil {
		return nil, err
	}
	if _, err := podInf.Informer().AddEventHandler(endpointutil.PodHandler(ctrl.services, add)); err != nil {
		return nil, err
	}
	// A deleted Endpoints is recreated.
	return ctrl, reconcile.Watch(epInf.Informer(), reconcile.Deletes, reconcile.EnqueueKey(ctrl.Queue))
}

func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	svc, err := c.services.Services(ns).Get(name)
	if apierrors.IsNotFound(err) {
		err := c.Client.CoreV1().Endpoints(ns).Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting endpoints %s: %w", key, err)
		}
		return nil
	}
	if err != nil {
		return err
	}
	if !endpointutil.Selects(svc) {
		return nil
	}
	pods, err := endpointutil.Pods(c.pods, svc)
	if err != nil {
		return err
	}
	subsets, truncated := Subsets(svc, pods)
	labels := maps.Clone(svc.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	if svc.Spec.ClusterIP == corev1.ClusterIPNone {
		labels[corev1.IsHeadlessService] = ""
	}
	cur, err := c.endpoints.Endpoints(ns).Get(name)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if cur == nil {
		ep := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels}, Subsets: subsets}
		if truncated {
			ep.Annotations = map[string]string{OverCapacityAnnotation: "truncated"}
		}
		_, err := c.Client.CoreV1().Endpoints(ns).Create(ctx, ep, metav1.CreateOptions{})
		if err != nil && !apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			return fmt.Errorf("creating endpoints %s: %w", key, err)
		}
		return nil
	}
	_, wasTruncated := cur.Annotations[OverCapacityAnnotation]
	if apiequality.Semantic.DeepEqual(cur.Subsets, subsets) && maps.Equal(cur.Labels, labels) && wasTruncated == truncated {
		return nil
	}
	next := cur.DeepCopy()
	next.Subsets, next.Labels = subsets, labels
	if truncated {
		if next.Annotations == nil {
			next.Annotations = map[string]string{}
		}
		next.Annotations[OverCapacityAnnotation] = "truncated"
	} else {
		delete(next.Annotations, OverCapacityAnnotation)
	}
	if _, err := c.Client.CoreV1().Endpoints(ns).Update(ctx, next, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("updating endpoints %s: %w", key, err)
	}
	return nil
}

// Subsets groups the pods' addresses by resolved ports, sorted, keeping at
// most MaxAddresses (ready ones first); truncated reports the cut.
func Subsets(svc *corev1.Service, pods []*corev1.Pod) ([]corev1.EndpointSubset, bool) {
	byPorts := map[string]*corev1.EndpointSubset{}
	for _, p := range pods {
		if p.DeletionTimestamp != nil && !svc.Spec.PublishNotReadyAddresses {
			continue
		}
		var ports []corev1.EndpointPort
		for i := range svc.Spec.Ports {
			sp := &svc.Spec.Ports[i]
			port, ok := endpointutil.Port(p, sp)
			if !ok {
				continue
			}
			proto := sp.Protocol
			if proto == "" {
				proto = corev1.ProtocolTCP
			}
			ports = append(ports, corev1.EndpointPort{Name: sp.Name, Port: port, Protocol: proto, AppProtocol: sp.AppProtocol})
		}
		if len(svc.Spec.Ports) > 0 && len(ports) == 0 {
			continue
		}
		sort.Slice(ports, func(i, j int) bool { return ports[i].Name < ports[j].Name })
		var k strings.Builder
		for _, pt := range ports {
			fmt.Fprintf(&k, "%s/%s/%d|", pt.Name, pt.Protocol, pt.Port)
		}
		ss := byPorts[k.String()]
		if ss == nil {
			ss = &corev1.EndpointSubset{Ports: ports}
			byPorts[k.String()] = ss
		}
		addr := corev1.EndpointAddress{IP: p.Status.PodIP, TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: p.Namespace, Name: p.Name, UID: p.UID}}
		if p.Spec.NodeName != "" {
			addr.NodeName = ptr(p.Spec.NodeName)
		}
		if p.Spec.Hostname != "" && p.Spec.Subdomain == svc.Name {
			addr.Hostname = p.Spec.Hostname
		}
		if svc.Spec.PublishNotReadyAddresses || endpointutil.Ready(p) {
			ss.Addresses = append(ss.Addresses, addr)
		} else {
			ss.NotReadyAddresses = append(ss.NotReadyAddresses, addr)
		}
	}
	keys := slices.Sorted(maps.Keys(byPorts))
	out := make([]corev1.EndpointSubset, 0, len(keys))
	total := 0
	for _, k := range keys {
		ss := byPorts[k]
		byIP := func(a, b corev1.EndpointAddress) int { return strings.Compare(a.IP, b.IP) }
		slices.SortFunc(ss.Addresses, byIP)
		slices.SortFunc(ss.NotReadyAddresses, byIP)
		total += len(ss.Addresses) + len(ss.NotReadyAddresses)
		out = append(out, *ss)
	}
	if total <= MaxAddresses {
		return out, false
	}
	// Ready addresses first, then not-ready, in subset order.
	budget := MaxAddresses
	for i := range out {
		n := min(budget, len(out[i].Addresses))
		out[i].Addresses = out[i].Addresses[:n]
		budget -= n
	}
	for i := range out {
		n := min(budget, len(out[i].NotReadyAddresses))
		out[i].NotReadyAddresses = out[i].NotReadyAddresses[:n]
		budget -= n
	}
	out = slices.DeleteFunc(out, func(ss corev1.EndpointSubset) bool { return len(ss.Addresses)+len(ss.NotReadyAddresses) == 0 })
	return out, true
}

func ptr[T any](v T) *T { return &v }
