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
		{Config{RESTConfig: rc, Nodes: 1, PodStartupJitter: -time.Second}, "PodStartupJitter"},
		{Config{RESTConfig: rc, Nodes: 70000}, "at most 65536 nodes"},
		{Config{RESTConfig: rc, Nodes: 1, Pods: 5000}, "Pods"},
	}
	for _, tc := range bad {
		if _, err := tc.cfg.withDefaults(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err %v, want one mentioning %q", tc.cfg, err, tc.want)
		}
	}
}
