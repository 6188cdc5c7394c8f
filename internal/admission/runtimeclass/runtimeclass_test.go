package runtimeclass

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/myriad-k8s/myriad/internal/admission"
)

func classes(rcs ...*nodev1.RuntimeClass) ClassGetter {
	m := map[string]*nodev1.RuntimeClass{}
	for _, rc := range rcs {
		m[rc.Name] = rc
	}
	return func(_ context.Context, name string) (*nodev1.RuntimeClass, error) {
		if rc, ok := m[name]; ok {
			return rc, nil
		}
		return nil, apierrors.NewNotFound(nodev1.Resource("runtimeclasses"), name)
	}
}

func overhead(cpu string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
}

func TestAdmitAndValidate(t *testing.T) {
	noSchedule := corev1.Toleration{Key: "sandbox", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
	get := classes(
		&nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "gvisor"}, Handler: "runsc",
			Overhead: &nodev1.Overhead{PodFixed: overhead("250m")},
			Scheduling: &nodev1.Scheduling{NodeSelector: map[string]string{"sandbox": "gvisor"},
				Tolerations: []corev1.Toleration{noSchedule}}},
		&nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "plain"}, Handler: "runc"},
	)
	pod := func(class string, mutate func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"}}
		if class != "" {
			p.Spec.RuntimeClassName = &class
		}
		if mutate != nil {
			mutate(p)
		}
		return p
	}
	tests := []struct {
		name         string
		pod          *corev1.Pod
		wantErr      string // 403 containing this, from Admit or Validate
		wantOverhead corev1.ResourceList
		wantSelector map[string]string
		wantTols     []corev1.Toleration
	}{
		{name: "no class", pod: pod("", nil)},
		{name: "class without overhead or scheduling", pod: pod("plain", nil)},
		{name: "overhead and scheduling applied", pod: pod("gvisor", nil), wantOverhead: overhead("250m"),
			wantSelector: map[string]string{"sandbox": "gvisor"}, wantTols: []corev1.Toleration{noSchedule}},
		{name: "selector merged, equal toleration kept once", pod: pod("gvisor", func(p *corev1.Pod) {
			p.Spec.NodeSelector = map[string]string{"zone": "a"}
			p.Spec.Tolerations = []corev1.Toleration{noSchedule}
		}), wantOverhead: overhead("250m"), wantSelector: map[string]string{"zone": "a", "sandbox": "gvisor"}, wantTols: []corev1.Toleration{noSchedule}},
		{name: "a wider pod toleration covers the class's", pod: pod("gvisor", func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
		}), wantOverhead: overhead("250m"), wantSelector: map[string]string{"sandbox": "gvisor"}, wantTols: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}},
		{name: "matching overhead accepted", pod: pod("gvisor", func(p *corev1.Pod) { p.Spec.Overhead = overhead("250m") }),
			wantOverhead: overhead("250m"), wantSelector: map[string]string{"sandbox": "gvisor"}, wantTols: []corev1.Toleration{noSchedule}},
		{name: "conflicting overhead", pod: pod("gvisor", func(p *corev1.Pod) { p.Spec.Overhead = overhead("1") }),
			wantErr: "Pod's Overhead doesn't match RuntimeClass's defined Overhead"},
		{name: "conflicting node selector", pod: pod("gvisor", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"sandbox": "kata"} }),
			wantErr: "conflict: runtimeClass.scheduling.nodeSelector[sandbox] = gvisor; pod.spec.nodeSelector[sandbox] = kata"},
		{name: "unknown class", pod: pod("nope", nil), wantErr: `RuntimeClass "nope" not found`},
		{name: "overhead without a class", pod: pod("", func(p *corev1.Pod) { p.Spec.Overhead = overhead("1") }),
			wantErr: "Pod Overhead set without corresponding RuntimeClass defined Overhead"},
		{name: "overhead with a class that defines none", pod: pod("plain", func(p *corev1.Pod) { p.Spec.Overhead = overhead("1") }),
			wantErr: "Pod Overhead set without corresponding RuntimeClass defined Overhead"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := New(get)
			a := &admission.Attributes{Operation: admission.Create, Resource: podsResource, Namespace: "default", Name: "p", Object: tt.pod}
			err := p.Admit(context.Background(), a)
			if err == nil {
				err = p.Validate(context.Background(), a)
			}
			if tt.wantErr != "" {
				if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want 403 containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			s := tt.pod.Spec
			if !apiequality.Semantic.DeepEqual(s.Overhead, tt.wantOverhead) || !apiequality.Semantic.DeepEqual(s.NodeSelector, tt.wantSelector) ||
				!apiequality.Semantic.DeepEqual(s.Tolerations, tt.wantTols) {
				t.Errorf("pod spec: overhead %v selector %v tolerations %v; want %v %v %v", s.Overhead, s.NodeSelector, s.Tolerations,
					tt.wantOverhead, tt.wantSelector, tt.wantTols)
			}
		})
	}
}

func TestMergeTolerations(t *testing.T) {
	sec := func(v int64) *int64 { return &v }
	exists := func(key string, effect corev1.TaintEffect) corev1.Toleration {
		return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: effect}
	}
	tests := []struct {
		name          string
		first, second []corev1.Toleration
		want          []corev1.Toleration
	}{
		{name: "disjoint", first: []corev1.Toleration{exists("a", "")}, second: []corev1.Toleration{exists("b", "")},
			want: []corev1.Toleration{exists("a", ""), exists("b", "")}},
		{name: "any effect covers one", first: []corev1.Toleration{exists("a", corev1.TaintEffectNoSchedule)}, second: []corev1.Toleration{exists("a", "")},
			want: []corev1.Toleration{exists("a", "")}},
		{name: "equal value", first: []corev1.Toleration{{Key: "a", Operator: corev1.TolerationOpEqual, Value: "1"}},
			second: []corev1.Toleration{{Key: "a", Operator: corev1.TolerationOpEqual, Value: "1"}},
			want:   []corev1.Toleration{{Key: "a", Operator: corev1.TolerationOpEqual, Value: "1"}}},
		{name: "a shorter NoExecute window does not cover a longer one",
			first:  []corev1.Toleration{{Key: "a", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: sec(10)}},
			second: []corev1.Toleration{{Key: "a", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: sec(60)}},
			want:   []corev1.Toleration{{Key: "a", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: sec(60)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := mergeTolerations(tt.first, tt.second); !apiequality.Semantic.DeepEqual(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestOnlyPodCreates(t *testing.T) {
	boom := errors.New("store unavailable")
	p := New(func(context.Context, string) (*nodev1.RuntimeClass, error) { return nil, boom })
	if p.Handles(admission.Update) || p.Handles(admission.Delete) || !p.Handles(admission.Create) {
		t.Fatal("RuntimeClass admits pod creates only")
	}
	class := "gvisor"
	pod := &corev1.Pod{Spec: corev1.PodSpec{RuntimeClassName: &class}}
	if err := p.Admit(context.Background(), &admission.Attributes{Operation: admission.Create, Resource: podsResource, Subresource: "binding", Object: &corev1.Binding{}}); err != nil {
		t.Fatalf("binding: %v", err)
	}
	if err := p.Admit(context.Background(), &admission.Attributes{Operation: admission.Create, Resource: podsResource, Object: pod}); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the lookup's", err)
	}
}
