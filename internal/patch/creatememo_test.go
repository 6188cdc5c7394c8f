package patch

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// newResetFieldManagers is newFieldManagers with the API server's reset
// fields for kinds with a status subresource: a create does not own status.
func newResetFieldManagers(t testing.TB) *FieldManagers {
	t.Helper()
	f := newFieldManagers(t)
	f.cfg.ResetFields = func(schema.GroupVersionKind, string) *fieldpath.Set {
		return fieldpath.NewSet(fieldpath.MakePathOrDie("status"))
	}
	return f
}

// checkCreate creates obj through memo's Create and plain's Update and
// fails unless both give the same object, managedFields' times aside.
func checkCreate(t *testing.T, memo, plain *FieldManagers, empty, obj runtime.Object) {
	t.Helper()
	got, err := memo.Create(empty.DeepCopyObject(), obj.DeepCopyObject(), "creator")
	if err != nil {
		t.Fatal(err)
	}
	want, err := plain.Update(empty.DeepCopyObject(), obj.DeepCopyObject(), "creator", "")
	if err != nil {
		t.Fatal(err)
	}
	gm, wm := got.(metav1.Object).GetManagedFields(), want.(metav1.Object).GetManagedFields()
	if len(gm) != len(wm) {
		t.Fatalf("managedFields: got %d entries, want %d:\n%v\n%v", len(gm), len(wm), gm, wm)
	}
	for i := range gm {
		if gm[i].Time == nil || wm[i].Time == nil {
			t.Fatalf("entry %d: no time: got %v, want %v", i, gm[i].Time, wm[i].Time)
		}
		if d := gm[i].Time.Sub(wm[i].Time.Time); d < -time.Minute || d > time.Minute {
			t.Errorf("entry %d: time %v, want about %v", i, gm[i].Time, wm[i].Time)
		}
		gm[i].Time, wm[i].Time = nil, nil
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Create gave\n%#v\nUpdate gave\n%#v", got, want)
	}
}

// renamed is obj as another create of it would be: another name, uid,
// creation time and namespace, which no managed set holds.
func renamed[T runtime.Object](obj T, i int) T {
	out := obj.DeepCopyObject().(T)
	m := any(out).(metav1.Object)
	m.SetName(fmt.Sprintf("%s-%d", m.GetName(), i))
	m.SetNamespace(fmt.Sprintf("ns-%d", i%2))
	m.SetUID(types.UID(fmt.Sprintf("uid-%d", i)))
	m.SetCreationTimestamp(metav1.NewTime(time.Unix(int64(1e9+i), 0)))
	m.SetGeneration(int64(i))
	return out
}

func TestCreateMatchesUpdate(t *testing.T) {
	podWith := func(edit func(*corev1.Pod)) *corev1.Pod {
		p := benchPod()
		edit(p)
		return p
	}
	deployment := testDeployment()
	deployment.Status = appsv1.DeploymentStatus{Replicas: 1, Conditions: []appsv1.DeploymentCondition{{Type: "Available", Status: "True"}}}
	for _, tc := range []struct {
		name  string
		empty runtime.Object
		objs  []runtime.Object // created in turn, each three times renamed
		hits  int              // Create's hits at the end
	}{
		{"pods of one ReplicaSet", &corev1.Pod{}, []runtime.Object{benchPod()}, 2},
		{"a small pod", &corev1.Pod{}, []runtime.Object{testPod()}, 2},
		{"nil and empty containers differ", &corev1.Pod{}, []runtime.Object{
			podWith(func(p *corev1.Pod) { p.Spec.Containers = nil }),
			podWith(func(p *corev1.Pod) { p.Spec.Containers = []corev1.Container{} }),
		}, 4},
		{"a label's key, then its value", &corev1.Pod{}, []runtime.Object{
			podWith(func(p *corev1.Pod) { p.Labels = map[string]string{"a": "1"} }),
			podWith(func(p *corev1.Pod) { p.Labels = map[string]string{"b": "1"} }),
			podWith(func(p *corev1.Pod) { p.Labels = map[string]string{"b": "2"} }),
		}, 6},
		{"a container more", &corev1.Pod{}, []runtime.Object{
			testPod(),
			podWith(func(p *corev1.Pod) {
				p.Spec.Containers = append(testPod().Spec.Containers, corev1.Container{Name: "c"})
			}),
		}, 4},
		{"nothing to own", &corev1.Pod{}, []runtime.Object{&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bare"}}}, 0},
		{"client-sent managedFields", &corev1.Pod{}, []runtime.Object{podWith(func(p *corev1.Pod) {
			p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "someone", Operation: metav1.ManagedFieldsOperationUpdate,
				APIVersion: "v1", FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:labels":{}}}`)}}}
		})}, 0},
		{"status is reset", &appsv1.Deployment{}, []runtime.Object{deployment}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			memo, plain := newResetFieldManagers(t), newResetFieldManagers(t)
			for _, obj := range tc.objs {
				for i := range 3 {
					checkCreate(t, memo, plain, tc.empty, renamed(obj, i))
				}
			}
			if memo.created.hits != tc.hits {
				t.Errorf("hits: %d, want %d (misses %d)", memo.created.hits, tc.hits, memo.created.misses)
			}
		})
	}
}

func TestCreateLeavesObjectAlone(t *testing.T) {
	f := newResetFieldManagers(t)
	for i := range 2 {
		want := renamed(benchPod(), i)
		got, err := f.Create(&corev1.Pod{}, want.DeepCopy(), "creator")
		if err != nil {
			t.Fatal(err)
		}
		p := got.(*corev1.Pod)
		if len(p.ManagedFields) != 1 {
			t.Fatalf("create %d: managedFields %v", i, p.ManagedFields)
		}
		p.ManagedFields = nil
		if !reflect.DeepEqual(p, want) {
			t.Errorf("create %d changed the object beyond managedFields:\n%#v\nwant\n%#v", i, p, want)
		}
	}
	if f.created.hits != 1 {
		t.Errorf("hits %d, want 1", f.created.hits)
	}
}

// A kind and manager whose creates do not repeat (events) stop paying for
// the key after a window without hits, and are tried again later.
func TestCreateMemoRests(t *testing.T) {
	f := newResetFieldManagers(t)
	create := func(i int) {
		p := benchPod()
		p.Labels["n"] = fmt.Sprint(i)
		if _, err := f.Create(&corev1.Pod{}, p, "creator"); err != nil {
			t.Fatal(err)
		}
	}
	for i := range memoWindow + memoRest {
		create(i)
	}
	if f.created.misses != memoWindow {
		t.Fatalf("looked up %d creates, want the window's %d", f.created.misses, memoWindow)
	}
	create(-1)
	if f.created.misses != memoWindow+1 {
		t.Fatalf("after the rest: looked up %d creates, want %d", f.created.misses, memoWindow+1)
	}
	create(-1)
	if f.created.hits != 1 {
		t.Errorf("hits %d, want 1", f.created.hits)
	}
}

// FuzzCreateMatchesUpdate creates two pods built from the input, the
// second a variation of the first, and checks that Create gives each what
// Update does: a remembered result is never another object's.
func FuzzCreateMatchesUpdate(f *testing.F) {
	f.Add("app", "web", uint8(2), uint8(0), uint8(0))
	f.Add("app", "web", uint8(0), uint8(1), uint8(3))
	f.Add("k", "", uint8(1), uint8(2), uint8(5))
	f.Fuzz(func(t *testing.T, key, value string, containers, shape, variation uint8) {
		memo, plain := newResetFieldManagers(t), newResetFieldManagers(t)
		first := fuzzPod(key, value, containers, shape)
		second := renamed(first, 1)
		switch variation % 6 {
		case 1:
			second = fuzzPod(key, value, containers, shape+1)
		case 2:
			second = fuzzPod(key+"x", value, containers, shape)
		case 3:
			second = fuzzPod(key, value+"x", containers, shape)
		case 4:
			second = fuzzPod(key, value, containers+1, shape)
		case 5:
			second = fuzzPod(value, key, containers, shape)
		}
		checkCreate(t, memo, plain, &corev1.Pod{}, first)
		checkCreate(t, memo, plain, &corev1.Pod{}, second)
		checkCreate(t, memo, plain, &corev1.Pod{}, renamed(second, 2))
	})
}

// fuzzPod is a pod whose fields vary with the input: a label, a number of
// containers, and shape's bits choosing nil or empty slices and maps and
// optional fields.
func fuzzPod(key, value string, containers, shape uint8) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{key: value}}}
	if shape&1 != 0 {
		p.Annotations = map[string]string{}
	}
	if shape&2 != 0 {
		p.Spec.Containers = []corev1.Container{}
	}
	for i := range int(containers % 4) {
		c := corev1.Container{Name: fmt.Sprintf("c%d", i), Image: value}
		if shape&4 != 0 {
			c.Env = []corev1.EnvVar{{Name: key, Value: value}}
		}
		if shape&8 != 0 {
			c.Ports = []corev1.ContainerPort{{ContainerPort: int32(80 + i), Protocol: corev1.ProtocolTCP}}
		}
		if shape&16 != 0 {
			c.Args = []string{}
		}
		p.Spec.Containers = append(p.Spec.Containers, c)
	}
	if shape&32 != 0 {
		p.Spec.NodeSelector = map[string]string{key: value}
	}
	if shape&64 != 0 {
		p.Status.Phase = corev1.PodPending
	}
	return p
}
