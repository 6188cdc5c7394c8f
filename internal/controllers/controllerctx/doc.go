// Package controllerctx carries what every controller is built from: the
// clients, the shared informer factories (typed and metadata-only), the
// event broadcaster, the clock and the logger. The controller manager
// (package controllers) fills one Context per process and hands it to each
// controller's constructor, so every controller shares one cache per
// resource and standbys can warm those caches before they lead.
package controllerctx
