package kubeletproxy

import (
	"net/url"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestParseLogOptions(t *testing.T) {
	for _, tc := range []struct {
		query  string
		want   func(*corev1.PodLogOptions) bool
		reason metav1.StatusReason
		msg    string
	}{
		{query: "", want: func(o *corev1.PodLogOptions) bool { return *o == corev1.PodLogOptions{} }},
		{query: "container=c&follow=true&previous=1&timestamps=TRUE&tailLines=0&limitBytes=1&sinceSeconds=1",
			want: func(o *corev1.PodLogOptions) bool {
				return o.Container == "c" && o.Follow && o.Previous && o.Timestamps && *o.TailLines == 0 && *o.LimitBytes == 1 && *o.SinceSeconds == 1
			}},
		{query: "follow=false&previous=0", want: func(o *corev1.PodLogOptions) bool { return !o.Follow && !o.Previous }},
		// Upstream's codec: any value but "0"/"false" is true, even "".
		{query: "follow=", want: func(o *corev1.PodLogOptions) bool { return o.Follow }},
		{query: "insecureSkipTLSVerifyBackend=true", want: func(o *corev1.PodLogOptions) bool { return o.InsecureSkipTLSVerifyBackend }},
		{query: "sinceTime=2024-05-01T10:00:00Z", want: func(o *corev1.PodLogOptions) bool { return o.SinceTime.UTC().Hour() == 10 }},
		{query: "tailLines=-1", reason: metav1.StatusReasonInvalid, msg: "tailLines: Invalid value: -1: must be greater than or equal to 0"},
		{query: "limitBytes=-5", reason: metav1.StatusReasonInvalid, msg: "limitBytes: Invalid value: -5: must be greater than 0"},
		{query: "sinceSeconds=-1", reason: metav1.StatusReasonInvalid, msg: "sinceSeconds: Invalid value: -1: must be greater than 0"},
		{query: "sinceSeconds=1&sinceTime=2024-05-01T10:00:00Z", reason: metav1.StatusReasonInvalid, msg: "at most one of `sinceTime` or `sinceSeconds` may be specified"},
		{query: "tailLines=-1&limitBytes=0", reason: metav1.StatusReasonInvalid, msg: "[tailLines: Invalid value: -1: must be greater than or equal to 0, limitBytes: Invalid value: 0: must be greater than 0]"},
		{query: "stream=All", reason: metav1.StatusReasonInvalid, msg: "stream: Forbidden: may not be specified"},
		{query: "tailLines=ten", reason: metav1.StatusReasonBadRequest, msg: `strconv.ParseInt: parsing "ten": invalid syntax`},
		{query: "limitBytes=99999999999999999999", reason: metav1.StatusReasonBadRequest, msg: "value out of range"},
		{query: "sinceTime=now", reason: metav1.StatusReasonBadRequest, msg: `cannot parse "now"`},
	} {
		t.Run(tc.query, func(t *testing.T) {
			q, err := url.ParseQuery(tc.query)
			if err != nil {
				t.Fatal(err)
			}
			opts, err := ParseLogOptions("p", q)
			if tc.want != nil {
				if err != nil || !tc.want(opts) {
					t.Fatalf("got %+v, %v", opts, err)
				}
				return
			}
			if apierrors.ReasonForError(err) != tc.reason || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("got %v (%s), want %s containing %q", err, apierrors.ReasonForError(err), tc.reason, tc.msg)
			}
		})
	}
}

// FuzzParseLogOptions: any query parses to options or a 400/422, never a
// panic, and accepted options satisfy upstream's validation.
func FuzzParseLogOptions(f *testing.F) {
	for _, s := range []string{"", "tailLines=-1", "sinceTime=2024-05-01T10:00:00Z&sinceSeconds=3", "follow=&container=%00", "limitBytes=9223372036854775807", "tailLines=1&tailLines=x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		opts, err := ParseLogOptions("p", q)
		if err != nil {
			if r := apierrors.ReasonForError(err); r != metav1.StatusReasonBadRequest && r != metav1.StatusReasonInvalid {
				t.Fatalf("%q: error of reason %q: %v", raw, r, err)
			}
			return
		}
		if len(validateLogOptions(opts)) != 0 {
			t.Fatalf("%q: accepted invalid options %+v", raw, opts)
		}
	})
}

func TestValidateContainer(t *testing.T) {
	pod := func(names ...string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
		for _, n := range names {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: n})
		}
		return p
	}
	withInit := pod("a", "b")
	withInit.Spec.InitContainers = []corev1.Container{{Name: "init"}}
	withInit.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug"}}}
	for _, tc := range []struct {
		name      string
		pod       *corev1.Pod
		container string
		want, err string
	}{
		{"the only container", pod("c"), "", "c", ""},
		{"named", pod("a", "b"), "b", "b", ""},
		{"init container", withInit, "init", "init", ""},
		{"ephemeral container", withInit, "debug", "debug", ""},
		{"none named of several", withInit, "", "", "a container name must be specified for pod p, choose one of: [init a b debug]"},
		{"no containers", pod(), "", "", "a container name must be specified for pod p"},
		{"unknown", pod("a"), "z", "", "container z is not valid for pod p"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := validateContainer(tc.container, tc.pod)
			if tc.err != "" {
				if !apierrors.IsBadRequest(err) || err.Error() != tc.err {
					t.Fatalf("got %v, want 400 %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v", got, err)
			}
		})
	}
}
