package registry

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func testTemplate() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}}},
	}
}

func testDeployment(mutate ...func(*appsv1.Deployment)) *appsv1.Deployment {
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", ResourceVersion: "1"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: testTemplate(),
		},
	}
	for _, m := range mutate {
		m(d)
	}
	return d
}

func TestDeploymentDefaults(t *testing.T) {
	r := mustLookup(t, newTestRegistry(t), "apps", "deployments")
	d := testDeployment(func(d *appsv1.Deployment) { d.Status.Replicas = 3 })
	wantErrs(t, create(r, d))
	s := d.Spec
	if *s.Replicas != 1 || s.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType ||
		s.Strategy.RollingUpdate.MaxSurge.String() != "25%" || s.Strategy.RollingUpdate.MaxUnavailable.String() != "25%" ||
		*s.RevisionHistoryLimit != 10 || *s.ProgressDeadlineSeconds != 600 {
		t.Errorf("deployment defaults: %+v", s)
	}
	c := s.Template.Spec.Containers[0]
	if s.Template.Spec.RestartPolicy != corev1.RestartPolicyAlways || c.ImagePullPolicy != corev1.PullAlways || c.TerminationMessagePath == "" {
		t.Errorf("template defaults: %+v", s.Template.Spec)
	}
	// Templates get scheme defaults only; admission (tolerations,
	// service account) applies to the pods later.
	if len(s.Template.Spec.Tolerations) != 0 || s.Template.Spec.ServiceAccountName != "" {
		t.Errorf("template got admission defaults: %+v", s.Template.Spec)
	}
	if d.Generation != 1 || d.Status.Replicas != 0 {
		t.Errorf("generation %d status %+v", d.Generation, d.Status)
	}
}

func TestDeploymentValidation(t *testing.T) {
	r := mustLookup(t, newTestRegistry(t), "apps", "deployments")
	cases := []struct {
		name   string
		mutate func(*appsv1.Deployment)
		want   []string
	}{
		{"valid", func(*appsv1.Deployment) {}, nil},
		{"no selector", func(d *appsv1.Deployment) { d.Spec.Selector = nil }, []string{"Required value: spec.selector"}},
		{"empty selector", func(d *appsv1.Deployment) { d.Spec.Selector = &metav1.LabelSelector{} }, []string{"Invalid value: spec.selector"}},
		{"selector mismatch", func(d *appsv1.Deployment) { d.Spec.Template.Labels = map[string]string{"app": "db"} },
			[]string{"Invalid value: spec.template.metadata.labels"}},
		{"negative replicas", func(d *appsv1.Deployment) { d.Spec.Replicas = ptrTo(int32(-1)) }, []string{"Invalid value: spec.replicas"}},
		{"restart policy", func(d *appsv1.Deployment) { d.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever },
			[]string{"Unsupported value: spec.template.spec.restartPolicy"}},
		{"no image", func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "" },
			[]string{"Required value: spec.template.spec.containers[0].image"}},
		{"zero surge and unavailable", func(d *appsv1.Deployment) {
			d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxSurge: ptrTo(intstr.FromInt32(0)), MaxUnavailable: ptrTo(intstr.FromString("0%"))}
		}, []string{"Invalid value: spec.strategy.rollingUpdate.maxUnavailable"}},
		{"recreate with rolling params", func(d *appsv1.Deployment) {
			d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{}}
		}, []string{"Forbidden: spec.strategy.rollingUpdate"}},
		{"progress deadline", func(d *appsv1.Deployment) { d.Spec.MinReadySeconds = 600 }, []string{"Invalid value: spec.progressDeadlineSeconds"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { wantErrs(t, create(r, testDeployment(tc.mutate)), tc.want...) })
	}
}

func TestDeploymentUpdateAndStatus(t *testing.T) {
	r := mustLookup(t, newTestRegistry(t), "apps", "deployments")
	old := testDeployment()
	wantErrs(t, create(r, old))
	old.Status.ReadyReplicas = 1

	cases := []struct {
		name    string
		mutate  func(*appsv1.Deployment)
		want    []string
		wantGen int64
	}{
		{"labels", func(d *appsv1.Deployment) { d.Labels = map[string]string{"x": "y"} }, nil, 1},
		{"annotations", func(d *appsv1.Deployment) { d.Annotations = map[string]string{"x": "y"} }, nil, 2},
		{"scale", func(d *appsv1.Deployment) { d.Spec.Replicas = ptrTo(int32(3)) }, nil, 2},
		{"status ignored", func(d *appsv1.Deployment) { d.Status.ReadyReplicas = 9 }, nil, 1},
		{"selector immutable", func(d *appsv1.Deployment) {
			d.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", "v": "2"}}
			d.Spec.Template.Labels["v"] = "2"
		}, []string{"Invalid value: spec.selector"}, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := old.DeepCopy()
			tc.mutate(d)
			wantErrs(t, update(r, d, old), tc.want...)
			if d.Generation != tc.wantGen || d.Status.ReadyReplicas != 1 {
				t.Errorf("generation %d, status %+v", d.Generation, d.Status)
			}
		})
	}

	st := old.DeepCopy()
	st.Spec.Replicas = ptrTo(int32(5))
	st.Labels = map[string]string{"x": "y"}
	st.Status.ReadyReplicas = 2
	wantErrs(t, updateStatus(r, st, old))
	if *st.Spec.Replicas != 1 || st.Labels != nil || st.Status.ReadyReplicas != 2 || st.Generation != 1 {
		t.Errorf("status update: %+v", st)
	}
	bad := old.DeepCopy()
	bad.Status.Replicas = -1
	wantErrs(t, updateStatus(r, bad, old), "Invalid value: status.replicas")

	// Scale subresource.
	sc := r.Scale.Scale(old)
	if sc.Name != "web" || sc.Spec.Replicas != 1 || sc.Status.Selector != "app=web" {
		t.Errorf("scale %+v", sc)
	}
	scaled := old.DeepCopy()
	r.Scale.SetReplicas(scaled, 4)
	if *scaled.Spec.Replicas != 4 {
		t.Errorf("SetReplicas: %v", *scaled.Spec.Replicas)
	}

	row := cells(r, func() *appsv1.Deployment {
		d := old.DeepCopy()
		d.Spec.Template.Spec.Containers = append(d.Spec.Template.Spec.Containers, corev1.Container{Name: "side", Image: "busybox"})
		d.Status = appsv1.DeploymentStatus{ReadyReplicas: 1, UpdatedReplicas: 1, AvailableReplicas: 1}
		return d
	}())
	if row["Ready"] != "1/1" || row["Up-to-date"] != int64(1) || row["Available"] != int64(1) ||
		row["Containers"] != "app,side" || row["Images"] != "nginx,busybox" || row["Selector"] != "app=web" {
		t.Errorf("row %v", row)
	}
	if got := columnNames(r); len(got) != 8 || got[4] != "Age" || got[7] != "Selector*" {
		t.Errorf("columns %v", got)
	}
}

func TestReplicaSet(t *testing.T) {
	r := mustLookup(t, newTestRegistry(t), "apps", "replicasets")
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "default", ResourceVersion: "1"},
		Spec:       appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, Template: testTemplate()},
	}
	wantErrs(t, create(r, rs))
	if *rs.Spec.Replicas != 1 || rs.Generation != 1 {
		t.Errorf("rs after create: %+v", rs)
	}
	upd := rs.DeepCopy()
	upd.Spec.Replicas = ptrTo(int32(2))
	upd.Spec.Template.Spec.ActiveDeadlineSeconds = ptrTo(int64(5))
	wantErrs(t, update(r, upd, rs), "Forbidden: spec.template.spec.activeDeadlineSeconds")
	if upd.Generation != 2 {
		t.Errorf("generation %d", upd.Generation)
	}
	rs.Status.Replicas, rs.Status.ReadyReplicas = 3, 2
	if f := r.SelectableFields(rs); f["status.replicas"] != "3" {
		t.Errorf("fields %v", f)
	}
	if row := cells(r, rs); row["Desired"] != int64(1) || row["Current"] != int64(3) || row["Ready"] != int64(2) {
		t.Errorf("row %v", row)
	}
}

func TestStatefulSet(t *testing.T) {
	r := mustLookup(t, newTestRegistry(t), "apps", "statefulsets")
	ss := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default", ResourceVersion: "1"},
		Spec: appsv1.StatefulSetSpec{
			Selector:             &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template:             testTemplate(),
			ServiceName:          "db",
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}},
		},
	}
	wantErrs(t, create(r, ss))
	s := ss.Spec
	if *s.Replicas != 1 || s.PodManagementPolicy != appsv1.OrderedReadyPodManagement ||
		s.UpdateStrategy.Type != appsv1.RollingUpdateStatefulSetStrategyType || *s.UpdateStrategy.RollingUpdate.Partition != 0 ||
		*s.RevisionHistoryLimit != 10 || s.PersistentVolumeClaimRetentionPolicy.WhenDeleted != appsv1.RetainPersistentVolumeClaimRetentionPolicyType ||
		*s.VolumeClaimTemplates[0].Spec.VolumeMode != corev1.PersistentVolumeFilesystem {
		t.Errorf("statefulset defaults: %+v", s)
	}
	upd := ss.DeepCopy()
	upd.Spec.Replicas = ptrTo(int32(3))
	wantErrs(t, update(r, upd, ss))
	upd.Spec.ServiceName = "other"
	wantErrs(t, update(r, upd, ss), "Forbidden: spec")
	ss.Status.ReadyReplicas = 1
	if row := cells(r, ss); row["Ready"] != "1/1" || row["Containers"] != "app" {
		t.Errorf("row %v", row)
	}
	if sc := r.Scale.Scale(ss); sc.Spec.Replicas != 1 || sc.Status.Selector != "app=web" {
		t.Errorf("scale %+v", sc)
	}
}

func TestDaemonSet(t *testing.T) {
	r := mustLookup(t, newTestRegistry(t), "apps", "daemonsets")
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "kube-system", ResourceVersion: "1"},
		Spec:       appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, Template: testTemplate()},
	}
	wantErrs(t, create(r, ds))
	ru := ds.Spec.UpdateStrategy.RollingUpdate
	if ds.Spec.UpdateStrategy.Type != appsv1.RollingUpdateDaemonSetStrategyType || ru.MaxUnavailable.String() != "1" ||
		ru.MaxSurge.String() != "0" || *ds.Spec.RevisionHistoryLimit != 10 || ds.Generation != 1 {
		t.Errorf("daemonset defaults: %+v", ds.Spec)
	}
	noSel := ds.DeepCopy()
	noSel.Spec.Selector = &metav1.LabelSelector{}
	wantErrs(t, update(r, noSel, ds), "Invalid value: spec.selector", "Invalid value: spec.selector")
	ds.Status = appsv1.DaemonSetStatus{DesiredNumberScheduled: 3, CurrentNumberScheduled: 3, NumberReady: 2}
	ds.Spec.Template.Spec.NodeSelector = map[string]string{"kubernetes.io/os": "linux"}
	if row := cells(r, ds); row["Desired"] != int64(3) || row["Ready"] != int64(2) || row["Node Selector"] != "kubernetes.io/os=linux" {
		t.Errorf("row %v", row)
	}
}
