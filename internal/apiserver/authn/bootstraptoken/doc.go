// Package bootstraptoken authenticates bootstrap tokens, the bearer tokens
// a new node joins with (kubeadm's "abcdef.0123456789abcdef"), as
// upstream's plugin/pkg/auth/authenticator/token/bootstrap: the token
// "<id>.<secret>" is the Secret kube-system/bootstrap-token-<id> of type
// bootstrap.kubernetes.io/token whose token-secret matches, marked
// usage-bootstrap-authentication=true and not past its expiration. Its
// user is system:bootstrap:<id> in system:bootstrappers plus the Secret's
// auth-extra-groups.
//
// Secrets are read from the API server's watch cache through an informer
// (apiserver.Server.ListerWatcher, selected to kube-system's bootstrap
// token Secrets), never from the store per request. Each Secret is parsed
// once, when its event arrives, into an entry holding what a request
// needs; a request costs a map lookup, a constant-time compare and a clock
// read. Expiration is checked per request, so an expired token stops
// working at its expiration instant whether or not the tokencleaner
// controller has deleted it yet; a deleted Secret stops working when its
// watch event reaches the informer.
package bootstraptoken
