package servingapprover

import (
	"context"
	"fmt"
	"slices"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	certlisters "k8s.io/client-go/listers/certificates/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/myriad-k8s/myriad/internal/controllers/certificates"
	"github.com/myriad-k8s/myriad/internal/controllers/controllerctx"
	"github.com/myriad-k8s/myriad/internal/controllers/reconcile"
)

// Name is the controller's name in --controllers (Myriad's own: upstream
// has no such controller).
const Name = "kubelet-serving-approver"

// ServiceAccount is the kube-system ServiceAccount it acts as; the default
// policy grants it approval of kubernetes.io/kubelet-serving requests.
const ServiceAccount = "kubelet-serving-approver"

// approvalMessage is the AutoApproved condition's message.
const approvalMessage = "Auto approving kubelet serving certificate: the requestor is the node and every SAN is one of its addresses."

// Descriptor registers the controller with the manager.
func Descriptor() controllerctx.Descriptor {
	return controllerctx.Describe(Name, 1, New)
}

// Controller is the kubelet serving certificate approver.
type Controller struct {
	reconcile.Base
	csrs   certlisters.CertificateSigningRequestLister
	byNode cache.Indexer
	nodes  corelisters.NodeLister
}

// requestorIndex files kubelet serving CSRs by requestor, so a Node that
// appears or changes its addresses brings back its pending requests.
const requestorIndex = "myriad.io/kubelet-serving-requestor"

func indexByRequestor(obj any) ([]string, error) {
	csr, ok := obj.(*certificatesv1.CertificateSigningRequest)
	if !ok || csr.Spec.SignerName != certificatesv1.KubeletServingSignerName || !strings.HasPrefix(csr.Spec.Username, certificates.NodeUserPrefix) {
		return nil, nil
	}
	return []string{strings.TrimPrefix(csr.Spec.Username, certificates.NodeUserPrefix)}, nil
}

// New registers on the shared CSR and Node informers.
func New(c *controllerctx.Context) (*Controller, error) {
	csrInf := c.Informers.Certificates().V1().CertificateSigningRequests()
	nodeInf := c.Informers.Core().V1().Nodes()
	if err := reconcile.AddIndexers(csrInf.Informer(), cache.Indexers{requestorIndex: indexByRequestor}); err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	ctrl := &Controller{csrs: csrInf.Lister(), byNode: csrInf.Informer().GetIndexer(), nodes: nodeInf.Lister()}
	ctrl.Base = reconcile.NewBase(c, Name, ctrl.sync, reconcile.Options[string]{})
	ctrl.Synced = []cache.InformerSynced{csrInf.Informer().HasSynced, nodeInf.Informer().HasSynced}
	err := reconcile.AddHandlers(
		reconcile.Handler{Informer: csrInf.Informer(), Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    ctrl.Enqueue,
			UpdateFunc: func(_, cur any) { ctrl.Enqueue(cur) },
		}},
		// Node status is written every minute or so; only a new Node or
		// new addresses can change a verdict.
		reconcile.Handler{Informer: nodeInf.Informer(), Handler: cache.ResourceEventHandlerFuncs{
			AddFunc: ctrl.enqueueNode,
			UpdateFunc: func(old, cur any) {
				o, ok1 := old.(*corev1.Node)
				n, ok2 := cur.(*corev1.Node)
				if ok1 && ok2 && !slices.Equal(o.Status.Addresses, n.Status.Addresses) {
					ctrl.enqueueNode(n)
				}
			},
		}},
	)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	return ctrl, nil
}

// enqueueNode queues the node's pending serving requests.
func (c *Controller) enqueueNode(obj any) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	csrs, err := c.byNode.ByIndex(requestorIndex, n.Name)
	if err != nil {
		return
	}
	for _, o := range csrs {
		if csr := o.(*certificatesv1.CertificateSigningRequest); len(csr.Status.Conditions) == 0 {
			c.Queue.Add(csr.Name)
		}
	}
}

func (c *Controller) sync(ctx context.Context, name string) error {
	csr, err := c.csrs.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if csr.Spec.SignerName != certificatesv1.KubeletServingSignerName || len(csr.Status.Certificate) > 0 {
		return nil
	}
	if approved, denied := certificates.ApprovalState(csr); approved || denied {
		return nil
	}
	req, err := certificates.ParseRequest(csr.Spec.Request)
	if err != nil {
		return nil // the signer marks it Failed; nothing to approve
	}
	nodeName, err := nodeName(csr, req)
	if err != nil {
		c.Log.Debug("kubelet serving CSR left pending", "csr", name, "reason", err)
		return nil
	}
	node, err := c.nodes.Get(nodeName)
	if apierrors.IsNotFound(err) {
		// The kubelet asks for its serving certificate once registered;
		// its Node may not have reached this informer yet.
		return fmt.Errorf("CSR %s: %w: %s: %w", name, ErrNodeNotFound, nodeName, reconcile.ErrRequeue)
	}
	if err != nil {
		return err
	}
	if err := checkSANs(req, node); err != nil {
		// The node may report the address in its next status update.
		return fmt.Errorf("CSR %s left pending: %w: %w", name, err, reconcile.ErrRequeue)
	}
	csr = csr.DeepCopy()
	csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue,
		Reason: "AutoApproved", Message: approvalMessage,
	})
	_, err = c.Client.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("approving CSR %s: %w", name, err)
	}
	return nil
}
