package sim

import (
	"encoding/json"
	"net/http"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
)

// AnnotationCPUUsage and AnnotationMemoryUsage on a pod set the usage its
// hollow node reports through the metrics API, as quantities for the whole
// pod ("250m", "1.5"; "64Mi"). The usage is spread over the pod's
// containers in proportion to their requests of the resource (evenly when
// none requests it). Without the annotation (or with one that does not
// parse) a pod uses Config.UsageFraction of each container's requests.
// Change the annotation on a running pod to change its load: the node
// reports the newest pod it has seen.
const (
	AnnotationCPUUsage    = "sim.myriad.io/cpu-usage"
	AnnotationMemoryUsage = "sim.myriad.io/memory-usage"
)

// metricsWindow is the window every sample claims to cover, as
// metrics-server reports its kubelets' (the HPA distrusts a CPU sample
// whose window began before the pod turned ready).
const metricsWindow = 30 * time.Second

const metricsGroup = "metrics.k8s.io"

// MetricsAPIHandler serves the resource metrics API, metrics.k8s.io/v1beta1,
// as metrics-server does, from the simulator's running pods:
//
//	GET /apis                                                  APIGroupList
//	GET /apis/metrics.k8s.io                                   APIGroup
//	GET /apis/metrics.k8s.io/v1beta1                           APIResourceList
//	GET /apis/metrics.k8s.io/v1beta1/nodes[/NAME]              NodeMetrics
//	GET /apis/metrics.k8s.io/v1beta1/pods                      PodMetrics, all namespaces
//	GET /apis/metrics.k8s.io/v1beta1/namespaces/NS/pods[/NAME] PodMetrics
//
// Lists take labelSelector. A pod is reported once its node has written it
// Running, until it terminates; a node's usage is the sum of its pods'.
// Answers are JSON. The handler has no authentication and no TLS: it is
// meant to sit behind the API server's aggregation layer (an APIService),
// or on loopback.
func (s *Sim) MetricsAPIHandler() http.Handler {
	mux := http.NewServeMux()
	base := "/apis/" + metricsGroup
	gv := metav1.GroupVersionForDiscovery{GroupVersion: metricsv1beta1.SchemeGroupVersion.String(), Version: "v1beta1"}
	group := metav1.APIGroup{Name: metricsGroup, Versions: []metav1.GroupVersionForDiscovery{gv}, PreferredVersion: gv}
	mux.HandleFunc("GET /apis", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}, Groups: []metav1.APIGroup{group}})
	})
	mux.HandleFunc("GET "+base, func(w http.ResponseWriter, _ *http.Request) {
		g := group
		g.TypeMeta = metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}
		writeJSON(w, http.StatusOK, &g)
	})
	mux.HandleFunc("GET "+base+"/v1beta1", func(w http.ResponseWriter, _ *http.Request) {
		verbs := metav1.Verbs{"get", "list"}
		writeJSON(w, http.StatusOK, &metav1.APIResourceList{
			TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
			GroupVersion: metricsv1beta1.SchemeGroupVersion.String(),
			APIResources: []metav1.APIResource{
				{Name: "nodes", SingularName: "", Kind: "NodeMetrics", Verbs: verbs},
				{Name: "pods", SingularName: "", Namespaced: true, Kind: "PodMetrics", Verbs: verbs},
			},
		})
	})
	v := base + "/v1beta1"
	mux.HandleFunc("GET "+v+"/nodes", func(w http.ResponseWriter, r *http.Request) { s.serveNodeMetrics(w, r, "") })
	mux.HandleFunc("GET "+v+"/nodes/{name}", func(w http.ResponseWriter, r *http.Request) {
		s.serveNodeMetrics(w, r, r.PathValue("name"))
	})
	mux.HandleFunc("GET "+v+"/pods", func(w http.ResponseWriter, r *http.Request) { s.servePodMetrics(w, r, "", "") })
	mux.HandleFunc("GET "+v+"/namespaces/{ns}/pods", func(w http.ResponseWriter, r *http.Request) {
		s.servePodMetrics(w, r, r.PathValue("ns"), "")
	})
	mux.HandleFunc("GET "+v+"/namespaces/{ns}/pods/{name}", func(w http.ResponseWriter, r *http.Request) {
		s.servePodMetrics(w, r, r.PathValue("ns"), r.PathValue("name"))
	})
	return mux
}

// podSample is one running pod's reported usage.
type podSample struct {
	node   string
	pod    *corev1.Pod
	usages []metricsv1beta1.ContainerMetrics
}

// runningPods samples every running pod of every node (failed nodes
// included: a dead kubelet's pods keep running, and metrics-server would
// report them stale, not gone).
func (s *Sim) runningPods() []podSample {
	var out []podSample
	for _, n := range s.nodes {
		n.mu.Lock()
		for _, st := range n.mu.pods {
			if st.phase == podRunning {
				out = append(out, podSample{node: n.name, pod: st.pod, usages: containerUsage(st.pod, s.cfg.UsageFraction)})
			}
		}
		n.mu.Unlock()
	}
	return out
}

// containerUsage is the usage model: each container's share of the pod's
// annotated usage, or fraction of its requests.
func containerUsage(p *corev1.Pod, fraction float64) []metricsv1beta1.ContainerMetrics {
	out := make([]metricsv1beta1.ContainerMetrics, len(p.Spec.Containers))
	for i, c := range p.Spec.Containers {
		out[i] = metricsv1beta1.ContainerMetrics{Name: c.Name, Usage: corev1.ResourceList{}}
	}
	for _, r := range []struct {
		name       corev1.ResourceName
		annotation string
	}{{corev1.ResourceCPU, AnnotationCPUUsage}, {corev1.ResourceMemory, AnnotationMemoryUsage}} {
		requests := make([]int64, len(p.Spec.Containers))
		var total int64
		for i, c := range p.Spec.Containers {
			q := c.Resources.Requests[r.name]
			requests[i] = q.MilliValue()
			total += requests[i]
		}
		pod, err := resource.ParseQuantity(p.Annotations[r.annotation])
		annotated := err == nil && p.Annotations[r.annotation] != ""
		for i := range p.Spec.Containers {
			var milli int64
			switch {
			case annotated && total > 0:
				milli = int64(float64(pod.MilliValue()) * float64(requests[i]) / float64(total))
			case annotated:
				milli = pod.MilliValue() / int64(len(p.Spec.Containers))
			case fraction > 0:
				milli = int64(float64(requests[i]) * fraction)
			}
			q := resource.NewMilliQuantity(milli, resource.DecimalSI)
			if r.name == corev1.ResourceMemory {
				q = resource.NewQuantity(milli/1000, resource.BinarySI) // whole bytes
			}
			out[i].Usage[r.name] = *q
		}
	}
	return out
}

func (s *Sim) selector(w http.ResponseWriter, r *http.Request) (labels.Selector, bool) {
	sel, err := labels.Parse(r.URL.Query().Get("labelSelector"))
	if err != nil {
		writeStatus(w, apierrors.NewBadRequest("invalid labelSelector: "+err.Error()))
		return nil, false
	}
	return sel, true
}

func (s *Sim) servePodMetrics(w http.ResponseWriter, r *http.Request, namespace, name string) {
	sel, ok := s.selector(w, r)
	if !ok {
		return
	}
	now := metav1.NewTime(s.cfg.Clock.Now().Truncate(time.Second))
	list := &metricsv1beta1.PodMetricsList{TypeMeta: metav1.TypeMeta{Kind: "PodMetricsList", APIVersion: metricsv1beta1.SchemeGroupVersion.String()}}
	for _, ps := range s.runningPods() {
		p := ps.pod
		if (namespace != "" && p.Namespace != namespace) || (name != "" && p.Name != name) || !sel.Matches(labels.Set(p.Labels)) {
			continue
		}
		list.Items = append(list.Items, metricsv1beta1.PodMetrics{
			ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, Labels: p.Labels, CreationTimestamp: now},
			Timestamp:  now, Window: metav1.Duration{Duration: metricsWindow}, Containers: ps.usages,
		})
	}
	sort.Slice(list.Items, func(i, j int) bool {
		a, b := list.Items[i], list.Items[j]
		return a.Namespace < b.Namespace || (a.Namespace == b.Namespace && a.Name < b.Name)
	})
	if name == "" {
		if list.Items == nil {
			list.Items = []metricsv1beta1.PodMetrics{}
		}
		writeJSON(w, http.StatusOK, list)
		return
	}
	if len(list.Items) == 0 {
		writeStatus(w, apierrors.NewNotFound(schema.GroupResource{Group: metricsGroup, Resource: "pods"}, name))
		return
	}
	item := list.Items[0]
	item.TypeMeta = metav1.TypeMeta{Kind: "PodMetrics", APIVersion: metricsv1beta1.SchemeGroupVersion.String()}
	writeJSON(w, http.StatusOK, &item)
}

func (s *Sim) serveNodeMetrics(w http.ResponseWriter, r *http.Request, name string) {
	sel, ok := s.selector(w, r)
	if !ok {
		return
	}
	now := metav1.NewTime(s.cfg.Clock.Now().Truncate(time.Second))
	type sum struct{ cpu, mem int64 }
	sums := map[string]*sum{}
	for _, ps := range s.runningPods() {
		t := sums[ps.node]
		if t == nil {
			t = &sum{}
			sums[ps.node] = t
		}
		for _, c := range ps.usages {
			t.cpu += c.Usage.Cpu().MilliValue()
			t.mem += c.Usage.Memory().Value()
		}
	}
	list := &metricsv1beta1.NodeMetricsList{TypeMeta: metav1.TypeMeta{Kind: "NodeMetricsList", APIVersion: metricsv1beta1.SchemeGroupVersion.String()},
		Items: []metricsv1beta1.NodeMetrics{}}
	for _, n := range s.nodes {
		n.mu.Lock()
		var lbls map[string]string
		registered := n.mu.registered
		if n.mu.obj != nil {
			lbls = n.mu.obj.Labels
		}
		n.mu.Unlock()
		if !registered || (name != "" && n.name != name) || !sel.Matches(labels.Set(lbls)) {
			continue
		}
		t := sums[n.name]
		if t == nil {
			t = &sum{}
		}
		list.Items = append(list.Items, metricsv1beta1.NodeMetrics{
			ObjectMeta: metav1.ObjectMeta{Name: n.name, Labels: lbls, CreationTimestamp: now},
			Timestamp:  now, Window: metav1.Duration{Duration: metricsWindow},
			Usage: corev1.ResourceList{
				corev1.ResourceCPU:    *resource.NewMilliQuantity(t.cpu, resource.DecimalSI),
				corev1.ResourceMemory: *resource.NewQuantity(t.mem, resource.BinarySI),
			},
		})
	}
	if name == "" {
		writeJSON(w, http.StatusOK, list)
		return
	}
	if len(list.Items) == 0 {
		writeStatus(w, apierrors.NewNotFound(schema.GroupResource{Group: metricsGroup, Resource: "nodes"}, name))
		return
	}
	item := list.Items[0]
	item.TypeMeta = metav1.TypeMeta{Kind: "NodeMetrics", APIVersion: metricsv1beta1.SchemeGroupVersion.String()}
	writeJSON(w, http.StatusOK, &item)
}

func writeStatus(w http.ResponseWriter, err *apierrors.StatusError) {
	st := err.ErrStatus
	st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	writeJSON(w, int(st.Code), &st)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	_ = enc.Encode(v) // the client went away; nothing to do
}
