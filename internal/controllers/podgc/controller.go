package podgc

import (
	"context"
	"log/slog"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/myriad-k8s/myriad/internal/controllers/controllerctx"
)

// Name is the controller's name in --controllers (upstream's).
const Name = "pod-garbage-collector"

const (
	// checkEvery is upstream's gcCheckPeriod.
	checkEvery = 20 * time.Second
	// quarantine is how long a node must be missing before its pods go
	// (upstream's 40 s), so a node being re-registered keeps them.
	quarantine = 40 * time.Second
	// TerminatedThreshold is upstream's --terminated-pod-gc-threshold.
	TerminatedThreshold = 12500
	outOfServiceTaint   = "node.kubernetes.io/out-of-service"
)

// Descriptor registers the controller with the manager.
func Descriptor() controllerctx.Descriptor {
	return controllerctx.Describe(Name, 1, New)
}

// Controller is the pod garbage collector.
type Controller struct {
	client    kubernetes.Interface
	pods      corelisters.PodLister
	nodes     corelisters.NodeLister
	synced    []cache.InformerSynced
	clock     clock.WithTicker
	log       *slog.Logger
	threshold int

	mu struct {
		sync.Mutex
		// missingSince is when each absent node was first found missing.
		missingSince map[string]time.Time
	}
}

// New uses the shared pod and node informers.
func New(c *controllerctx.Context) (*Controller, error) {
	podInf := c.Informers.Core().V1().Pods()
	nodeInf := c.Informers.Core().V1().Nodes()
	ctrl := &Controller{
		client:    c.Client,
		pods:      podInf.Lister(),
		nodes:     nodeInf.Lister(),
		synced:    []cache.InformerSynced{podInf.Informer().HasSynced, nodeInf.Informer().HasSynced},
		clock:     c.Clock,
		log:       c.Logger.With("controller", Name),
		threshold: TerminatedThreshold,
	}
	ctrl.mu.missingSince = map[string]time.Time{}
	return ctrl, nil
}

// Run collects every 20 s until ctx is done.
func (c *Controller) Run(ctx context.Context, _ int) {
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return
	}
	t := c.clock.NewTicker(checkEvery)
	defer t.Stop()
	for {
		c.collect(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
	}
}

// collect is one pass.
func (c *Controller) collect(ctx context.Context) {
	pods, err := c.pods.List(labels.Everything())
	if err != nil {
		return
	}
	now := c.clock.Now()
	var finished []*corev1.Pod
	missing := map[string]bool{}
	for _, p := range pods {
		switch {
		case p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed:
			finished = append(finished, p)
		case p.DeletionTimestamp != nil && p.Spec.NodeName == "":
			c.forceDelete(ctx, p, "terminating and never scheduled")
			continue
		}
		if p.Spec.NodeName == "" {
			continue
		}
		n, err := c.nodes.Get(p.Spec.NodeName)
		if apierrors.IsNotFound(err) {
			missing[p.Spec.NodeName] = true
			if c.missingLongEnough(ctx, p.Spec.NodeName, now) {
				c.forceDelete(ctx, p, "bound to a node that no longer exists")
			}
			continue
		}
		if err == nil && p.DeletionTimestamp != nil && outOfService(n) {
			c.forceDelete(ctx, p, "terminating on an out-of-service node")
		}
	}
	c.mu.Lock()
	for name := range c.mu.missingSince {
		if !missing[name] {
			delete(c.mu.missingSince, name)
		}
	}
	c.mu.Unlock()
	if excess := len(finished) - c.threshold; excess > 0 {
		sort.Slice(finished, func(i, j int) bool {
			return finished[i].CreationTimestamp.Before(&finished[j].CreationTimestamp)
		})
		for _, p := range finished[:excess] {
			c.forceDelete(ctx, p, "finished pods beyond the threshold")
		}
	}
}

// missingLongEnough reports whether the node has been missing for the
// quarantine, confirmed by a live read (the cache may lag a re-created node).
func (c *Controller) missingLongEnough(ctx context.Context, node string, now time.Time) bool {
	c.mu.Lock()
	since, ok := c.mu.missingSince[node]
	if !ok {
		c.mu.missingSince[node] = now
	}
	c.mu.Unlock()
	if !ok || now.Sub(since) < quarantine {
		return false
	}
	_, err := c.client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	return apierrors.IsNotFound(err)
}

func outOfService(n *corev1.Node) bool {
	ready := false
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			ready = cond.Status == corev1.ConditionTrue
		}
	}
	if ready {
		return false
	}
	for _, t := range n.Spec.Taints {
		if t.Key == outOfServiceTaint && t.Effect == corev1.TaintEffectNoExecute {
			return true
		}
	}
	return false
}

func (c *Controller) forceDelete(ctx context.Context, p *corev1.Pod, why string) {
	zero := int64(0)
	err := c.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &p.UID}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		c.log.Info("force-deleting pod", "pod", p.Namespace+"/"+p.Name, "err", err)
		return
	}
	c.log.Info("force-deleted pod", "pod", p.Namespace+"/"+p.Name, "reason", why)
}
