package controllers

import (
	"github.com/myriad-k8s/myriad/internal/controllers/bootstrapsigner"
	"github.com/myriad-k8s/myriad/internal/controllers/certificates/approver"
	"github.com/myriad-k8s/myriad/internal/controllers/certificates/cleaner"
	"github.com/myriad-k8s/myriad/internal/controllers/certificates/servingapprover"
	"github.com/myriad-k8s/myriad/internal/controllers/certificates/signer"
	"github.com/myriad-k8s/myriad/internal/controllers/clusterroleaggregation"
	"github.com/myriad-k8s/myriad/internal/controllers/controllerctx"
	"github.com/myriad-k8s/myriad/internal/controllers/cronjob"
	"github.com/myriad-k8s/myriad/internal/controllers/daemonset"
	"github.com/myriad-k8s/myriad/internal/controllers/deployment"
	"github.com/myriad-k8s/myriad/internal/controllers/endpoints"
	"github.com/myriad-k8s/myriad/internal/controllers/endpointslice"
	"github.com/myriad-k8s/myriad/internal/controllers/garbagecollector"
	"github.com/myriad-k8s/myriad/internal/controllers/job"
	"github.com/myriad-k8s/myriad/internal/controllers/namespace"
	"github.com/myriad-k8s/myriad/internal/controllers/nodelifecycle"
	"github.com/myriad-k8s/myriad/internal/controllers/podautoscaler"
	"github.com/myriad-k8s/myriad/internal/controllers/podgc"
	"github.com/myriad-k8s/myriad/internal/controllers/pvbinder"
	"github.com/myriad-k8s/myriad/internal/controllers/replicaset"
	"github.com/myriad-k8s/myriad/internal/controllers/resourcequota"
	"github.com/myriad-k8s/myriad/internal/controllers/rootcacert"
	"github.com/myriad-k8s/myriad/internal/controllers/serviceaccount"
	"github.com/myriad-k8s/myriad/internal/controllers/serviceaccounttoken"
	"github.com/myriad-k8s/myriad/internal/controllers/statefulset"
	"github.com/myriad-k8s/myriad/internal/controllers/tokencleaner"
	"github.com/myriad-k8s/myriad/internal/controllers/vapstatus"
	"github.com/myriad-k8s/myriad/internal/controllers/volumeprotection"
)

// All lists every controller the manager can run, in start order.
func All() []controllerctx.Descriptor {
	return []controllerctx.Descriptor{
		serviceaccount.Descriptor(),
		serviceaccounttoken.Descriptor(),
		rootcacert.Descriptor(),
		namespace.Descriptor(),
		garbagecollector.Descriptor(),
		nodelifecycle.Descriptor(),
		podgc.Descriptor(),
		endpointslice.Descriptor(),
		endpoints.Descriptor(),
		replicaset.Descriptor(),
		replicaset.RCDescriptor(),
		deployment.Descriptor(),
		daemonset.Descriptor(),
		job.Descriptor(),
		cronjob.Descriptor(),
		statefulset.Descriptor(),
		pvbinder.Descriptor(),
		volumeprotection.PVCDescriptor(),
		volumeprotection.PVDescriptor(),
		resourcequota.Descriptor(),
		approver.Descriptor(),
		servingapprover.Descriptor(),
		signer.Descriptor(),
		cleaner.Descriptor(),
		tokencleaner.Descriptor(),
		bootstrapsigner.Descriptor(),
		podautoscaler.Descriptor(),
		clusterroleaggregation.Descriptor(),
		vapstatus.Descriptor(),
	}
}
