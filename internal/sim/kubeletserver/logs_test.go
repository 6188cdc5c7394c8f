package kubeletserver

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestContainerLogs(t *testing.T) {
	ts := newTestServer(t, nil)
	client := ts.httpClient(t, &ts.pki.apiserverCert)
	pfx := "hollow-node-0 default/web/app line "
	lines := func(ks ...int) string {
		var b strings.Builder
		for _, k := range ks {
			b.WriteString(pfx)
			b.WriteString(itoa(k))
			b.WriteByte('\n')
		}
		return b.String()
	}
	// The clock is at t0+10.5s: lines 0..10 have been written.
	all := lines(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10)
	tests := []struct {
		name     string
		path     string
		wantCode int
		want     string
	}{
		{"whole log", "/containerLogs/default/web/app", 200, all},
		{"tailLines", "/containerLogs/default/web/app?tailLines=3", 200, lines(8, 9, 10)},
		{"tailLines=0", "/containerLogs/default/web/app?tailLines=0", 200, ""},
		{"legacy tail", "/containerLogs/default/web/app?tail=2", 200, lines(9, 10)},
		{"tail=all", "/containerLogs/default/web/app?tail=all", 200, all},
		{"limitBytes cuts a line", "/containerLogs/default/web/app?limitBytes=40", 200, all[:40]},
		{"sinceSeconds", "/containerLogs/default/web/app?sinceSeconds=2", 200, lines(9, 10)},
		{"sinceTime", "/containerLogs/default/web/app?sinceTime=2026-11-26T08:00:07Z", 200, lines(7, 8, 9, 10)},
		{"timestamps", "/containerLogs/default/web/app?tailLines=1&timestamps=true", 200, "2026-11-26T08:00:10Z " + lines(10)},
		{"stream Stdout", "/containerLogs/default/web/app?stream=Stdout", 200, all},
		{"stream Stderr has nothing", "/containerLogs/default/web/app?stream=Stderr", 200, ""},
		{"other container", "/containerLogs/default/web/sidecar?tailLines=1", 200, "hollow-node-0 default/web/sidecar line 10\n"},
		{"previous", "/containerLogs/default/web/app?previous=true", 400, `previous terminated container "app" in pod "web" not found` + "\n"},
		{"waiting container", "/containerLogs/default/web/init", 400, `container "init" in pod "web" is waiting to start: PodInitializing` + "\n"},
		{"unknown container", "/containerLogs/default/web/nope", 404, `container "nope" not found in pod "web"` + "\n"},
		{"unknown pod", "/containerLogs/default/nope/app", 404, `pod "nope" does not exist` + "\n"},
		{"other namespace", "/containerLogs/kube-system/web/app", 404, `pod "web" does not exist` + "\n"},
		{"negative tailLines", "/containerLogs/default/web/app?tailLines=-1", 422, `{"message": "Invalid request."}` + "\n"},
		{"zero limitBytes", "/containerLogs/default/web/app?limitBytes=0", 422, `{"message": "Invalid request."}` + "\n"},
		{"since twice", "/containerLogs/default/web/app?sinceSeconds=1&sinceTime=2026-11-26T08:00:07Z", 422, `{"message": "Invalid request."}` + "\n"},
		{"tailLines with a stream", "/containerLogs/default/web/app?tailLines=1&stream=Stdout", 422, `{"message": "Invalid request."}` + "\n"},
		{"unknown stream", "/containerLogs/default/web/app?stream=Both", 422, `{"message": "Invalid request."}` + "\n"},
		{"bad number", "/containerLogs/default/web/app?tailLines=x", 400, `{"message": "Unable to decode query."}` + "\n"},
		{"bad time", "/containerLogs/default/web/app?sinceTime=yesterday", 400, `{"message": "Unable to decode query."}` + "\n"},
		{"unknown path", "/containerLogs/default/web", 404, "404 page not found\n"},
		{"healthz", "/healthz", 200, "ok"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := client.Get(ts.url + tt.path)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.wantCode || string(body) != tt.want {
				t.Errorf("GET %s: %d %q, want %d %q", tt.path, resp.StatusCode, body, tt.wantCode, tt.want)
			}
		})
	}
}

func TestNodeDown(t *testing.T) {
	ts := newTestServer(t, nil)
	ts.pods.down = true
	client := ts.httpClient(t, &ts.pki.apiserverCert)
	for _, path := range []string{"/containerLogs/default/web/app", "/exec/default/web/app?command=true&output=1", "/portForward/default/web"} {
		resp, err := client.Post(ts.url+path, "", nil)
		if strings.HasPrefix(path, "/containerLogs") {
			resp, err = client.Get(ts.url + path)
		}
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || string(body) != "the kubelet of hollow node hollow-node-0 is down\n" {
			t.Errorf("%s: %d %q; want 503", path, resp.StatusCode, body)
		}
	}
}

func itoa(k int) string {
	if k < 10 {
		return string(rune('0' + k))
	}
	return itoa(k/10) + itoa(k%10)
}

func TestContainerLogsTrimmedToMaxLines(t *testing.T) {
	ts := newTestServer(t, func(c *Config) { c.MaxLogLines = 3 })
	resp, err := ts.httpClient(t, &ts.pki.apiserverCert).Get(ts.url + "/containerLogs/default/web/app")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if got := strings.Count(string(body), "\n"); got != 3 || !strings.HasPrefix(string(body), "hollow-node-0 default/web/app line 8\n") {
		t.Errorf("log kept %d lines: %q; want lines 8..10", got, body)
	}
}

func TestContainerLogsFollow(t *testing.T) {
	ts := newTestServer(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ts.url+"/containerLogs/default/web/app?follow=true&tailLines=1", nil)
	resp, err := ts.httpClient(t, &ts.pki.apiserverCert).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	want := func(k int) {
		t.Helper()
		line, err := r.ReadString('\n')
		if err != nil || line != "hollow-node-0 default/web/app line "+itoa(k)+"\n" {
			t.Fatalf("read %q, %v; want line %d", line, err, k)
		}
	}
	want(10)
	for k := 11; k <= 13; k++ {
		waitForTimer(t, ts)
		ts.clock.Step(time.Second)
		want(k)
	}
	// The container stops: the followed log ends after its last line.
	pod := runningPod("default", "web", t0, "app", "sidecar")
	now := ts.clock.Now()
	pod.Status.ContainerStatuses[0].State.Running = nil
	pod.Status.ContainerStatuses[0].State.Terminated = &corev1.ContainerStateTerminated{StartedAt: metav1.NewTime(t0), FinishedAt: metav1.NewTime(now)}
	ts.pods.set(pod)
	waitForTimer(t, ts)
	ts.clock.Step(time.Second)
	if rest, err := io.ReadAll(r); err != nil || len(rest) != 0 {
		t.Fatalf("after the container stopped: %q, %v; want the end of the stream", rest, err)
	}
}

func waitForTimer(t *testing.T, ts *testServer) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !ts.clock.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatal("the follower never waited for its next line")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestContainerLogsFollowEndsWithClient(t *testing.T) {
	ts := newTestServer(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ts.url+"/containerLogs/default/web/app?follow=1&tailLines=0", nil)
	resp, err := ts.httpClient(t, &ts.pki.apiserverCert).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	waitForTimer(t, ts)
	cancel()
	resp.Body.Close()
	deadline := time.Now().Add(5 * time.Second)
	for ts.clock.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatal("the handler kept following after the client left")
		}
		time.Sleep(time.Millisecond)
	}
}

func FuzzParseLogOptions(f *testing.F) {
	for _, s := range []string{"", "follow=true&tailLines=3", "tail=all", "tail=-1", "limitBytes=1&sinceSeconds=9",
		"sinceTime=2026-11-26T08:00:07Z&timestamps=0", "stream=Stderr", "tailLines=9223372036854775808", "previous=FALSE&sinceTime=null"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, query string) {
		q, err := url.ParseQuery(query)
		if err != nil {
			return
		}
		opts, err := parseLogOptions(q)
		if err != nil {
			if err != errDecode && err != errInvalid {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if opts.TailLines != nil && *opts.TailLines < 0 || opts.LimitBytes != nil && *opts.LimitBytes < 1 ||
			opts.SinceSeconds != nil && *opts.SinceSeconds < 1 {
			t.Fatalf("invalid options accepted: %+v", opts)
		}
	})
}
