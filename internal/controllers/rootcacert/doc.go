// Package rootcacert is the root CA publisher: every active namespace has
// a ConfigMap kube-root-ca.crt whose ca.crt is the API server's CA bundle,
// recreated or corrected when changed (kube-controller-manager's
// "root-ca-cert-publisher").
package rootcacert
