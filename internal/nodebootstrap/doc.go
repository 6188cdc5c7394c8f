// Package nodebootstrap makes what a new node needs to join: a bootstrap
// token (a kube-system Secret of type bootstrap.kubernetes.io/token, as
// `kubeadm token create` makes) and the bootstrap kubeconfig a kubelet
// starts with (--bootstrap-kubeconfig), which it trades for a client
// certificate through a CertificateSigningRequest (TLS bootstrap).
package nodebootstrap
