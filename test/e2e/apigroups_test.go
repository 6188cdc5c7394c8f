package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// appManifest is a typical application's manifest: a Deployment with its
// HorizontalPodAutoscaler, a Service behind an Ingress of the default
// class, a NetworkPolicy, a claim of the default StorageClass, a CronJob,
// and the cluster-scoped classes and CSI objects a platform team applies. RUN makes cluster-scoped names
// unique to the run and NS is the namespace.
//
// The NetworkPolicy's port names its protocol: spec.ingress is an atomic
// list, so kubectl's three-way patch replaces it whole whenever the live
// list differs from the manifest's, and a defaulted protocol would make
// every apply "configured", as it does against upstream.
const appManifest = `apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata:
  name: nginx-RUN
  annotations: {ingressclass.kubernetes.io/is-default-class: "true"}
spec:
  controller: k8s.io/ingress-nginx
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: fast-RUN
  annotations: {storageclass.kubernetes.io/is-default-class: "true"}
provisioner: ebs.csi.aws.com
parameters: {type: gp3}
---
apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata:
  name: ebs-RUN.csi.aws.com
spec:
  podInfoOnMount: true
---
apiVersion: storage.k8s.io/v1
kind: CSINode
metadata:
  name: node-RUN
spec:
  drivers:
  - name: ebs-RUN.csi.aws.com
    nodeID: i-0123
    topologyKeys: [topology.ebs.csi.aws.com/zone]
---
apiVersion: storage.k8s.io/v1
kind: VolumeAttachment
metadata:
  name: csi-RUN
spec:
  attacher: ebs-RUN.csi.aws.com
  nodeName: node-RUN
  source: {persistentVolumeName: pv-RUN}
---
apiVersion: storage.k8s.io/v1
kind: VolumeAttributesClass
metadata:
  name: gold-RUN
driverName: ebs-RUN.csi.aws.com
parameters: {iops: "3000"}
---
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata:
  name: gvisor-RUN
handler: runsc
overhead:
  podFixed: {cpu: 250m, memory: 64Mi}
scheduling:
  nodeSelector: {sandbox: gvisor}
---
apiVersion: storage.k8s.io/v1
kind: CSIStorageCapacity
metadata:
  name: capacity-a
  namespace: NS
storageClassName: fast-RUN
capacity: 100Gi
---
apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: NS
spec:
  selector: {app: web}
  ports:
  - port: 80
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: web
  namespace: NS
spec:
  tls:
  - hosts: [web.example.com]
    secretName: web-tls
  rules:
  - host: web.example.com
    http:
      paths:
      - path: /
        pathType: Prefix
        backend:
          service: {name: web, port: {number: 80}}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: web-from-frontend
  namespace: NS
spec:
  podSelector:
    matchLabels: {app: web}
  ingress:
  - from:
    - podSelector:
        matchLabels: {role: frontend}
    ports:
    - {port: 80, protocol: TCP}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: data
  namespace: NS
spec:
  accessModes: [ReadWriteOnce]
  resources:
    requests: {storage: 1Gi}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: NS
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx:1.27
        resources:
          requests: {cpu: 100m}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: web
  namespace: NS
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 2
  maxReplicas: 6
  metrics:
  - type: Resource
    resource:
      name: cpu
      target: {type: Utilization, averageUtilization: 70}
---
apiVersion: batch/v1
kind: CronJob
metadata:
  name: report
  namespace: NS
spec:
  schedule: "0 3 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers:
          - name: report
            image: busybox:1.36
            command: [sh, -c, "echo report"]
`

// TestAPIGroupsManifest applies one manifest of networking.k8s.io,
// node.k8s.io and storage.k8s.io objects through kubectl against the real
// `myriad up`: it applies cleanly twice, reads back with upstream's
// columns, explains, defaults the claim's and the ingress's class, refuses
// a path without pathType with 422, and deletes.
func TestAPIGroupsManifest(t *testing.T) {
	s := shared
	run := runSuffix()
	ns := "apigroups-" + run
	manifest := strings.NewReplacer("RUN", run, "NS", ns).Replace(appManifest)
	s.mustKubectl(t, "", "create", "namespace", ns)
	defer s.kubectl(t, "", "delete", "namespace", ns, "--wait=false")

	wantLines := []string{
		"ingressclass.networking.k8s.io/nginx-" + run,
		"storageclass.storage.k8s.io/fast-" + run,
		"csidriver.storage.k8s.io/ebs-" + run + ".csi.aws.com",
		"csinode.storage.k8s.io/node-" + run,
		"volumeattachment.storage.k8s.io/csi-" + run,
		"volumeattributesclass.storage.k8s.io/gold-" + run,
		"runtimeclass.node.k8s.io/gvisor-" + run,
		"csistoragecapacity.storage.k8s.io/capacity-a",
		"service/web",
		"ingress.networking.k8s.io/web",
		"networkpolicy.networking.k8s.io/web-from-frontend",
		"persistentvolumeclaim/data",
		"deployment.apps/web",
		"horizontalpodautoscaler.autoscaling/web",
		"cronjob.batch/report",
	}
	t.Run("apply twice", func(t *testing.T) {
		for _, verb := range []string{"created", "unchanged"} {
			out := s.mustKubectl(t, manifest, "apply", "-f", "-")
			for _, l := range wantLines {
				if !strings.Contains(out, l+" "+verb) {
					t.Errorf("apply: no %q in:\n%s", l+" "+verb, out)
				}
			}
		}
	})

	t.Run("get shows upstream's columns", func(t *testing.T) {
		for _, tc := range []struct {
			args []string
			want []string // header words, then cells
		}{
			{[]string{"-n", ns, "get", "ingress"}, []string{"NAME", "CLASS", "HOSTS", "ADDRESS", "PORTS", "AGE", "web", "nginx-" + run, "web.example.com", "80, 443"}},
			{[]string{"get", "ingressclass", "nginx-" + run}, []string{"NAME", "CONTROLLER", "PARAMETERS", "AGE", "k8s.io/ingress-nginx", "<none>"}},
			{[]string{"-n", ns, "get", "netpol"}, []string{"NAME", "POD-SELECTOR", "AGE", "web-from-frontend", "app=web"}},
			{[]string{"get", "runtimeclass", "gvisor-" + run}, []string{"NAME", "HANDLER", "AGE", "runsc"}},
			{[]string{"get", "sc", "fast-" + run}, []string{"NAME", "PROVISIONER", "RECLAIMPOLICY", "VOLUMEBINDINGMODE", "ALLOWVOLUMEEXPANSION", "AGE",
				"fast-" + run + " (default)", "ebs.csi.aws.com", "Delete", "Immediate", "false"}},
			{[]string{"get", "csidriver", "ebs-" + run + ".csi.aws.com"}, []string{"NAME", "ATTACHREQUIRED", "PODINFOONMOUNT", "STORAGECAPACITY",
				"TOKENREQUESTS", "REQUIRESREPUBLISH", "MODES", "AGE", "true", "<unset>", "Persistent"}},
			{[]string{"get", "csinode", "node-" + run}, []string{"NAME", "DRIVERS", "AGE", "node-" + run}},
			{[]string{"get", "volumeattachment", "csi-" + run}, []string{"NAME", "ATTACHER", "PV", "NODE", "ATTACHED", "AGE", "pv-" + run, "false"}},
			{[]string{"-n", ns, "get", "csistoragecapacity"}, []string{"NAME", "STORAGECLASSNAME", "CAPACITY", "AGE", "capacity-a", "100Gi"}},
			{[]string{"get", "vac", "gold-" + run}, []string{"NAME", "DRIVERNAME", "AGE", "ebs-" + run + ".csi.aws.com"}},
			{[]string{"-n", ns, "get", "pvc", "data"}, []string{"STORAGECLASS", "fast-" + run}},
			{[]string{"-n", ns, "get", "hpa", "web"}, []string{"NAME", "REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "REPLICAS", "Deployment/web", "cpu: ", "/70%"}},
			{[]string{"-n", ns, "get", "cronjob", "report"}, []string{"NAME", "SCHEDULE", "0 3 * * *"}},
		} {
			out := s.mustKubectl(t, "", tc.args...)
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("kubectl %s lacks %q:\n%s", strings.Join(tc.args, " "), w, out)
				}
			}
		}
	})

	t.Run("defaults", func(t *testing.T) {
		if got := s.mustKubectl(t, "", "-n", ns, "get", "pvc", "data", "-o", "jsonpath={.spec.storageClassName}"); got != "fast-"+run {
			t.Errorf("claim's class %q, want the default fast-%s", got, run)
		}
		if got := s.mustKubectl(t, "", "-n", ns, "get", "ingress", "web", "-o", "jsonpath={.spec.ingressClassName}"); got != "nginx-"+run {
			t.Errorf("ingress's class %q, want the default nginx-%s", got, run)
		}
		if got := s.mustKubectl(t, "", "-n", ns, "get", "netpol", "web-from-frontend", "-o", "jsonpath={.spec.policyTypes} {.spec.ingress[0].ports[0].protocol}"); got != `["Ingress"] TCP` {
			t.Errorf("network policy defaults %q", got)
		}
		got := s.mustKubectl(t, "", "get", "csidriver", "ebs-"+run+".csi.aws.com", "-o",
			"jsonpath={.spec.attachRequired} {.spec.podInfoOnMount} {.spec.fsGroupPolicy} {.spec.volumeLifecycleModes}")
		if got != `true true ReadWriteOnceWithFSType ["Persistent"]` {
			t.Errorf("CSI driver defaults %q", got)
		}
	})

	t.Run("a pod gets its runtime class's overhead and node selector", func(t *testing.T) {
		c := s.client(t)
		pod := testPod("sandboxed", "")
		pod.Spec.RuntimeClassName = ptrTo("gvisor-" + run)
		got, err := c.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer c.CoreV1().Pods(ns).Delete(context.Background(), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptrTo(int64(0))})
		if cpu := got.Spec.Overhead[corev1.ResourceCPU]; cpu.String() != "250m" || got.Spec.NodeSelector["sandbox"] != "gvisor" {
			t.Errorf("pod overhead %v, node selector %v", got.Spec.Overhead, got.Spec.NodeSelector)
		}
		pod = testPod("no-such-class", "")
		pod.Spec.RuntimeClassName = ptrTo("kata-" + run)
		if _, err := c.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("pod naming a missing runtime class: err %v, want 403", err)
		}
	})

	t.Run("watch sees an ingress change", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		w, err := s.client(t).NetworkingV1().Ingresses(ns).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=web"})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		s.mustKubectl(t, "", "-n", ns, "label", "ingress", "web", "tier=edge")
		for ev := range w.ResultChan() {
			if ing, ok := ev.Object.(*networkingv1.Ingress); ok && ev.Type == watch.Modified && ing.Labels["tier"] == "edge" {
				return
			}
		}
		t.Error("no MODIFIED event for the labelled ingress")
	})

	t.Run("explain", func(t *testing.T) {
		out := s.mustKubectl(t, "", "explain", "ingress.spec.rules")
		for _, w := range []string{"networking.k8s.io", "FIELD: rules", "host", "http"} {
			if !strings.Contains(out, w) {
				t.Errorf("explain ingress.spec.rules lacks %q:\n%s", w, out)
			}
		}
		s.mustKubectl(t, "", "explain", "storageclass.volumeBindingMode")
		s.mustKubectl(t, "", "explain", "runtimeclass.handler")
	})

	t.Run("path without pathType is 422", func(t *testing.T) {
		bad := "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: bad, namespace: " + ns + "}\n" +
			"spec:\n  rules:\n  - http:\n      paths:\n      - path: /\n        backend: {service: {name: web, port: {number: 80}}}\n"
		out, err := s.kubectl(t, bad, "apply", "-f", "-")
		if err == nil || !strings.Contains(out, "spec.rules[0].http.paths[0].pathType: Required value") {
			t.Errorf("kubectl apply of a path without pathType: err %v\n%s", err, out)
		}
		// The same through client-go, for the status code and the cause.
		ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "bad"}, Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{
			IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{
				Path: "/", Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}}}}}}}}}}
		_, err = s.client(t).NetworkingV1().Ingresses(ns).Create(context.Background(), ing, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !namesField(err, "spec.rules[0].http.paths[0].pathType") {
			t.Errorf("create: err %v, want 422 naming spec.rules[0].http.paths[0].pathType", err)
		}
	})

	t.Run("delete -f removes them all", func(t *testing.T) {
		out := s.mustKubectl(t, manifest, "delete", "-f", "-")
		for _, l := range wantLines {
			kind, name, _ := strings.Cut(l, "/")
			if w := kind + ` "` + name + `" deleted`; !strings.Contains(out, w) {
				t.Errorf("delete: no %q in:\n%s", w, out)
			}
		}
		out, err := s.kubectl(t, manifest, "get", "-f", "-", "--ignore-not-found")
		if err != nil || strings.TrimSpace(out) != "" {
			t.Errorf("after delete, get -f: err %v\n%s", err, out)
		}
	})
}

// namesField reports whether err is an API status with a cause at field.
func namesField(err error, field string) bool {
	st, ok := err.(apierrors.APIStatus)
	if !ok || st.Status().Details == nil {
		return false
	}
	for _, c := range st.Status().Details.Causes {
		if c.Field == field {
			return true
		}
	}
	return false
}
