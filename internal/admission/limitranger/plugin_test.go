package limitranger

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/myriad-k8s/myriad/internal/admission"
)

func rl(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func container(name string, requests, limits corev1.ResourceList) corev1.Container {
	return corev1.Container{Name: name, Resources: corev1.ResourceRequirements{Requests: requests, Limits: limits}}
}

func pod(cs ...corev1.Container) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: corev1.PodSpec{Containers: cs}}
}

func lr(items ...corev1.LimitRangeItem) *corev1.LimitRange {
	return &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "lr", Namespace: "ns"}, Spec: corev1.LimitRangeSpec{Limits: items}}
}

func lister(lrs ...*corev1.LimitRange) Lister {
	return func(_ context.Context, ns string) ([]*corev1.LimitRange, error) {
		if ns != "ns" {
			return nil, nil
		}
		return lrs, nil
	}
}

var (
	podsGVR = corev1.SchemeGroupVersion.WithResource("pods")
	pvcsGVR = corev1.SchemeGroupVersion.WithResource("persistentvolumeclaims")
)

func TestDefaults(t *testing.T) {
	defaults := lr(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer,
		Default: rl("cpu", "500m", "memory", "1Gi"), DefaultRequest: rl("cpu", "200m")})
	withInit := pod(container("app", nil, nil))
	withInit.Spec.InitContainers = []corev1.Container{container("init", rl("cpu", "1"), nil)}
	tests := []struct {
		name                 string
		pod                  *corev1.Pod
		wantReq, wantLim     string // of the first container, name=value sorted
		wantAnnotation, wQOS string
	}{
		{"empty container gets everything", pod(container("app", nil, nil)), "cpu=200m", "cpu=500m,memory=1Gi",
			"LimitRanger plugin set: cpu request for container app; cpu, memory limit for container app", "Burstable"},
		{"set values are kept", pod(container("app", rl("cpu", "300m"), rl("cpu", "300m", "memory", "2Gi"))), "cpu=300m", "cpu=300m,memory=2Gi", "", "Burstable"},
		{"init containers too", withInit, "cpu=200m", "cpu=500m,memory=1Gi",
			"LimitRanger plugin set: cpu request for container app; cpu, memory limit for container app; cpu, memory limit for init container init", "Burstable"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.pod.Status.QOSClass = corev1.PodQOSBestEffort // as the strategy set it before the defaults
			p := New(lister(defaults))
			a := &admission.Attributes{Operation: admission.Create, Resource: podsGVR, Namespace: "ns", Name: "p", Object: tc.pod}
			if err := p.Admit(context.Background(), a); err != nil {
				t.Fatal(err)
			}
			r := tc.pod.Spec.Containers[0].Resources
			if got := pretty(r.Requests); got != tc.wantReq {
				t.Errorf("requests %s, want %s", got, tc.wantReq)
			}
			if got := pretty(r.Limits); got != tc.wantLim {
				t.Errorf("limits %s, want %s", got, tc.wantLim)
			}
			if got := tc.pod.Annotations[Annotation]; got != tc.wantAnnotation {
				t.Errorf("annotation %q, want %q", got, tc.wantAnnotation)
			}
			if got := string(tc.pod.Status.QOSClass); got != tc.wQOS {
				t.Errorf("qosClass %s, want %s", got, tc.wQOS)
			}
		})
	}
}

func pretty(l corev1.ResourceList) string {
	var parts []string
	for _, k := range sortedNames(l) {
		v := l[k]
		parts = append(parts, string(k)+"="+v.String())
	}
	return strings.Join(parts, ",")
}

func TestValidatePod(t *testing.T) {
	ctr := func(min, max, ratio corev1.ResourceList) *corev1.LimitRange {
		return lr(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Min: min, Max: max, MaxLimitRequestRatio: ratio})
	}
	podItem := func(min, max corev1.ResourceList) *corev1.LimitRange {
		return lr(corev1.LimitRangeItem{Type: corev1.LimitTypePod, Min: min, Max: max})
	}
	tests := []struct {
		name string
		lr   *corev1.LimitRange
		pod  *corev1.Pod
		want string // "" admits
	}{
		{"within min and max", ctr(rl("cpu", "100m"), rl("cpu", "1"), nil), pod(container("a", rl("cpu", "200m"), rl("cpu", "500m"))), ""},
		{"request under min", ctr(rl("cpu", "100m"), nil, nil), pod(container("a", rl("cpu", "50m"), nil)),
			"minimum cpu usage per Container is 100m, but request is 50m"},
		{"no request for min", ctr(rl("memory", "1Mi"), nil, nil), pod(container("a", nil, nil)),
			"minimum memory usage per Container is 1Mi.  No request is specified"},
		{"limit under min", ctr(rl("cpu", "100m"), nil, nil), pod(container("a", rl("cpu", "100m"), rl("cpu", "90m"))),
			"minimum cpu usage per Container is 100m, but limit is 90m"},
		{"limit over max", ctr(nil, rl("cpu", "1"), nil), pod(container("a", nil, rl("cpu", "2"))),
			"maximum cpu usage per Container is 1, but limit is 2"},
		{"no limit for max", ctr(nil, rl("cpu", "1"), nil), pod(container("a", rl("cpu", "1"), nil)),
			"maximum cpu usage per Container is 1.  No limit is specified"},
		{"request over max", ctr(nil, rl("cpu", "1"), nil), pod(container("a", rl("cpu", "2"), rl("cpu", "1"))),
			"maximum cpu usage per Container is 1, but request is 2"},
		{"ratio within", ctr(nil, nil, rl("cpu", "2")), pod(container("a", rl("cpu", "500m"), rl("cpu", "1"))), ""},
		{"ratio over", ctr(nil, nil, rl("cpu", "2")), pod(container("a", rl("cpu", "100m"), rl("cpu", "1"))),
			"cpu max limit to request ratio per Container is 2, but provided ratio is 10.000000"},
		{"ratio without request", ctr(nil, nil, rl("cpu", "2")), pod(container("a", nil, rl("cpu", "1"))),
			"cpu max limit to request ratio per Container is 2, but no request is specified or request is 0"},
		{"every container is checked", ctr(rl("cpu", "100m"), nil, nil), pod(container("a", rl("cpu", "1"), nil), container("b", rl("cpu", "10m"), nil)),
			"minimum cpu usage per Container is 100m, but request is 10m"},
		{"two errors", ctr(rl("cpu", "100m", "memory", "1Mi"), nil, nil), pod(container("a", nil, nil)),
			"[minimum cpu usage per Container is 100m.  No request is specified, minimum memory usage per Container is 1Mi.  No request is specified]"},
		{"pod sum over max", podItem(nil, rl("cpu", "1")), pod(container("a", rl("cpu", "600m"), rl("cpu", "600m")), container("b", rl("cpu", "600m"), rl("cpu", "600m"))),
			"maximum cpu usage per Pod is 1, but limit is 1200m"},
		{"pod sum within", podItem(rl("cpu", "1"), nil), pod(container("a", rl("cpu", "600m"), nil), container("b", rl("cpu", "600m"), nil)), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := New(lister(tc.lr))
			err := p.Validate(context.Background(), &admission.Attributes{Operation: admission.Create, Resource: podsGVR, Namespace: "ns", Name: "p", Object: tc.pod})
			if tc.want == "" {
				if err != nil {
					t.Fatalf("err = %v", err)
				}
				return
			}
			if !apierrors.IsForbidden(err) || err.Error() != `pods "p" is forbidden: `+tc.want {
				t.Fatalf("err = %v, want 403 %q", err, tc.want)
			}
		})
	}
}

func TestValidateClaim(t *testing.T) {
	l := lr(corev1.LimitRangeItem{Type: corev1.LimitTypePersistentVolumeClaim, Min: rl("storage", "1Gi"), Max: rl("storage", "10Gi")})
	claim := func(storage string) *corev1.PersistentVolumeClaim {
		c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", ResourceVersion: "3"}}
		if storage != "" {
			c.Spec.Resources.Requests = rl("storage", storage)
		}
		return c
	}
	tests := []struct {
		name string
		op   admission.Operation
		pvc  *corev1.PersistentVolumeClaim
		want string
	}{
		{"within", admission.Create, claim("5Gi"), ""},
		{"under min", admission.Create, claim("500Mi"), "minimum storage usage per PersistentVolumeClaim is 1Gi, but request is 500Mi"},
		{"over max", admission.Create, claim("20Gi"), "maximum storage usage per PersistentVolumeClaim is 10Gi, but request is 20Gi"},
		{"expanded over max", admission.Update, claim("20Gi"), "maximum storage usage per PersistentVolumeClaim is 10Gi, but request is 20Gi"},
		{"no request", admission.Create, claim(""), "[minimum storage usage per PersistentVolumeClaim is 1Gi.  No request is specified, maximum storage usage per PersistentVolumeClaim is 10Gi.  No request is specified]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := &admission.Attributes{Operation: tc.op, Resource: pvcsGVR, Namespace: "ns", Name: "c", Object: tc.pvc}
			if tc.op == admission.Update {
				a.OldObject = claim("5Gi")
			}
			err := New(lister(l)).Validate(context.Background(), a)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("err = %v", err)
				}
				return
			}
			if !apierrors.IsForbidden(err) || err.Error() != `persistentvolumeclaims "c" is forbidden: `+tc.want {
				t.Fatalf("err = %v, want 403 %q", err, tc.want)
			}
		})
	}
}

// TestSkipped: pod updates, subresources, other resources, objects being
// deleted and namespaces without ranges are not looked at.
func TestSkipped(t *testing.T) {
	boom := errors.New("must not be read")
	calls := 0
	p := New(func(context.Context, string) ([]*corev1.LimitRange, error) { calls++; return nil, boom })
	deleting := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", DeletionTimestamp: &metav1.Time{}}}
	for _, a := range []*admission.Attributes{
		{Operation: admission.Update, Resource: podsGVR, Namespace: "ns", Object: pod(), OldObject: pod()},
		{Operation: admission.Create, Resource: podsGVR, Subresource: "binding", Namespace: "ns", Object: &corev1.Binding{}},
		{Operation: admission.Create, Resource: corev1.SchemeGroupVersion.WithResource("configmaps"), Namespace: "ns", Object: &corev1.ConfigMap{}},
		{Operation: admission.Update, Resource: pvcsGVR, Namespace: "ns", Object: &corev1.PersistentVolumeClaim{}, OldObject: deleting},
	} {
		if err := p.Admit(context.Background(), a); err != nil {
			t.Errorf("Admit %s/%s: %v", a.Resource.Resource, a.Subresource, err)
		}
		if err := p.Validate(context.Background(), a); err != nil {
			t.Errorf("Validate %s/%s: %v", a.Resource.Resource, a.Subresource, err)
		}
	}
	if calls != 0 {
		t.Errorf("%d lookups, want 0", calls)
	}
	// No range: the pod is left alone.
	p = New(lister())
	pd := pod(container("a", nil, nil))
	if err := p.Admit(context.Background(), &admission.Attributes{Operation: admission.Create, Resource: podsGVR, Namespace: "ns", Object: pd}); err != nil {
		t.Fatal(err)
	}
	if pd.Spec.Containers[0].Resources.Requests != nil || pd.Annotations != nil {
		t.Errorf("pod changed without a range: %+v", pd)
	}
}
