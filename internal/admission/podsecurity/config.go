package podsecurity

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	psconfig "k8s.io/pod-security-admission/admission/api"
	psload "k8s.io/pod-security-admission/admission/api/load"
	"sigs.k8s.io/yaml"
)

// PluginName is the plugin's name in an AdmissionConfiguration.
const PluginName = "PodSecurity"

// admissionConfiguration is the part of upstream's AdmissionConfiguration
// (apiserver.config.k8s.io/v1, and the older
// apiserver.k8s.io/v1alpha1 of the same shape) this plugin reads: its own
// entry, configured inline or by a path relative to the file.
type admissionConfiguration struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Plugins    []struct {
		Name          string          `json:"name"`
		Path          string          `json:"path"`
		Configuration json.RawMessage `json:"configuration"`
	} `json:"plugins"`
}

// LoadAdmissionConfig reads the PodSecurityConfiguration out of the
// AdmissionConfiguration file at path (--admission-control-config-file).
// An empty path, or a file without a PodSecurity entry, gives upstream's
// defaults. The configuration is decoded and defaulted by the library's
// own loader, so every version it knows (v1, v1beta1, v1alpha1) works.
func LoadAdmissionConfig(path string) (*psconfig.PodSecurityConfiguration, error) {
	if path == "" {
		return psload.LoadFromData(nil)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading admission configuration: %w", err)
	}
	var ac admissionConfiguration
	if err := yaml.Unmarshal(data, &ac); err != nil {
		return nil, fmt.Errorf("admission configuration %s: %w", path, err)
	}
	if ac.Kind != "AdmissionConfiguration" {
		return nil, fmt.Errorf("admission configuration %s: kind is %q, not AdmissionConfiguration", path, ac.Kind)
	}
	for _, p := range ac.Plugins {
		if p.Name != PluginName {
			continue
		}
		var raw []byte
		switch {
		case len(p.Configuration) > 0 && string(p.Configuration) != "null":
			raw = p.Configuration
		case p.Path != "":
			f := p.Path
			if !filepath.IsAbs(f) {
				f = filepath.Join(filepath.Dir(path), f)
			}
			if raw, err = os.ReadFile(f); err != nil {
				return nil, fmt.Errorf("reading %s configuration: %w", PluginName, err)
			}
		}
		cfg, err := psload.LoadFromData(raw)
		if err != nil {
			return nil, fmt.Errorf("%s configuration in %s: %w", PluginName, path, err)
		}
		return cfg, nil
	}
	return psload.LoadFromData(nil)
}
