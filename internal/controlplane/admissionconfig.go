package controlplane

import (
	psconfig "k8s.io/pod-security-admission/admission/api"

	"github.com/myriad-k8s/myriad/internal/admission/podsecurity"
	"github.com/myriad-k8s/myriad/internal/encryption"
)

// securityFiles are the configuration files of admission and encryption
// at rest, loaded before the store opens so that a bad file stops the
// start with its error instead of leaving a half-started server.
type securityFiles struct {
	podSecurity *psconfig.PodSecurityConfiguration
	encryption  *encryption.Config
}

func loadSecurityFiles(cfg Config) (securityFiles, error) {
	var f securityFiles
	var err error
	if f.podSecurity, err = podsecurity.LoadAdmissionConfig(cfg.AdmissionControlConfigFile); err != nil {
		return f, err
	}
	if cfg.EncryptionProviderConfig != "" {
		if f.encryption, err = encryption.LoadFile(cfg.EncryptionProviderConfig); err != nil {
			return f, err
		}
	}
	return f, nil
}
