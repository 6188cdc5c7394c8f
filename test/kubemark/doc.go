// Package kubemark holds the end-to-end test that joins upstream's v1.34
// kubelet, built as kubemark's hollow node (cmd/kubemark: the real kubelet
// over a fake container runtime), to `myriad up` and checks that its nodes
// go Ready and stay Ready, run pods, and are drained (TestKubemark). It is
// its own module so that the main module never depends on
// k8s.io/kubernetes; README.md says how to run it and what it measured.
package kubemark
