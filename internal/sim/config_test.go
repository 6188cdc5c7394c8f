package sim

import (
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

func TestConfigDefaultsAndValidation(t *testing.T) {
	rc := &rest.Config{Host: "http://x"}
	cfg, err := Config{RESTConfig: rc, Nodes: 3}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.NamePrefix != "hollow-node-" || cfg.LeaseDuration != 40*time.Second || cfg.RenewInterval != 10*time.Second ||
		cfg.NodeStatusInterval != time.Minute || cfg.Pods != 110 || cfg.CPU.String() != "32" || cfg.Memory.String() != "256Gi" ||
		cfg.PodWatch != PodWatchPerNode || cfg.StatusImages != 0 {
		t.Errorf("defaults: %+v", cfg)
	}
	full, _ := Config{RESTConfig: rc, Nodes: 1, FullStatusHeartbeat: true}.withDefaults()
	if full.StatusImages != 50 {
		t.Errorf("full status heartbeat: %d images, want 50", full.StatusImages)
	}
	bad := []struct {
		cfg  Config
		want string
	}{
		{Config{Nodes: 1}, "RESTConfig"},
		{Config{RESTConfig: rc}, "Nodes"},
		{Config{RESTConfig: rc, Nodes: 1, PodWatch: "sometimes"}, "PodWatch"},
		{Config{RESTConfig: rc, Nodes: 1, PodStartupDelay: -time.Second}, "PodStartupDelay"},
		{Config{RESTConfig: rc, Nodes: 2, Fail: FailPlan{Count: 3}}, "Fail.Count"},
		{Config{RESTConfig: rc, Nodes: 2, Fail: FailPlan{Count: 1, Nodes: []string{"hollow-node-1"}}}, "alternatives"},
		{Config{RESTConfig: rc, Nodes: 2, Fail: FailPlan{Count: 1, After: -time.Second}}, "Fail.After"},
		{Config{RESTConfig: rc, Nodes: 70000}, "at most 65536 nodes"},
		{Config{RESTConfig: rc, Nodes: 1, Pods: 5000}, "Pods"},
	}
	for _, tc := range bad {
		if _, err := tc.cfg.withDefaults(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err %v, want one mentioning %q", tc.cfg, err, tc.want)
		}
	}
}

func TestPodStartupJitterDefaults(t *testing.T) {
	rc := &rest.Config{Host: "http://x"}
	tests := []struct {
		name          string
		delay, jitter time.Duration
		wantDelay     time.Duration
		wantJitter    time.Duration
	}{
		{"defaults", 0, 0, time.Second, 200 * time.Millisecond},
		{"a fifth of the delay", 3 * time.Second, 0, 3 * time.Second, 600 * time.Millisecond},
		{"explicit", time.Second, 50 * time.Millisecond, time.Second, 50 * time.Millisecond},
		// Negative means none, and stays negative so defaults can be filled twice.
		{"none", time.Second, -1, time.Second, -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Config{RESTConfig: rc, Nodes: 1, PodStartupDelay: tc.delay, PodStartupJitter: tc.jitter}.withDefaults()
			if err != nil {
				t.Fatal(err)
			}
			if cfg.PodStartupDelay != tc.wantDelay || cfg.PodStartupJitter != tc.wantJitter {
				t.Errorf("delay %v jitter %v, want %v %v", cfg.PodStartupDelay, cfg.PodStartupJitter, tc.wantDelay, tc.wantJitter)
			}
			again, err := cfg.withDefaults()
			if err != nil || again.PodStartupJitter != cfg.PodStartupJitter || again.Seed != cfg.Seed {
				t.Errorf("defaults filled twice: jitter %v seed %d (err %v), want %v %d", again.PodStartupJitter, again.Seed, err, cfg.PodStartupJitter, cfg.Seed)
			}
			if cfg.Seed == 0 {
				t.Error("Seed left 0; want a random one filled in")
			}
		})
	}
}

func TestParseFailNodes(t *testing.T) {
	tests := []struct {
		in        string
		wantCount int
		wantNames []string
		wantErr   bool
	}{
		{"", 0, nil, false},
		{"25", 25, nil, false},
		{" 3 ", 3, nil, false},
		{"hollow-node-3", 0, []string{"hollow-node-3"}, false},
		{"hollow-node-3, hollow-node-7,", 0, []string{"hollow-node-3", "hollow-node-7"}, false},
		{"-2", 0, nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			count, names, err := ParseFailNodes(tc.in)
			if (err != nil) != tc.wantErr || count != tc.wantCount || strings.Join(names, "|") != strings.Join(tc.wantNames, "|") {
				t.Errorf("ParseFailNodes(%q) = %d, %q, %v; want %d, %q, error %v", tc.in, count, names, err, tc.wantCount, tc.wantNames, tc.wantErr)
			}
		})
	}
}
