package controllers

import "github.com/myriad-k8s/myriad/internal/controllers/controllerctx"

// All lists every controller the manager can run, in start order.
func All() []controllerctx.Descriptor {
	return []controllerctx.Descriptor{}
}
