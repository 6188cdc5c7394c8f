package aggregator

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AuthenticationConfigMap is where extension API servers read whom to
// trust (k8s.io/apiserver's DelegatingAuthenticationOptions).
const (
	AuthenticationConfigMapNamespace = metav1.NamespaceSystem
	AuthenticationConfigMapName      = "extension-apiserver-authentication"
)

// AuthenticationInfo is what the ConfigMap publishes. The header names
// are fixed to the ones the proxy sets (client-go's auth proxy round
// tripper): X-Remote-User, X-Remote-Uid, X-Remote-Group, X-Remote-Extra-.
type AuthenticationInfo struct {
	// ClientCAPEM is the CA client certificates chain to (client-ca-file).
	ClientCAPEM []byte
	// RequestHeaderCAPEM is the front-proxy CA
	// (requestheader-client-ca-file).
	RequestHeaderCAPEM []byte
	// AllowedNames are the proxy client certificate's common names
	// (requestheader-allowed-names).
	AllowedNames []string
}

// data is the ConfigMap's content, in upstream's keys and encoding (the
// header lists as JSON arrays).
func (i *AuthenticationInfo) data() (map[string]string, error) {
	d := map[string]string{}
	if len(i.ClientCAPEM) > 0 {
		d["client-ca-file"] = string(i.ClientCAPEM)
	}
	if len(i.RequestHeaderCAPEM) == 0 {
		return d, nil
	}
	d["requestheader-client-ca-file"] = string(i.RequestHeaderCAPEM)
	for key, v := range map[string][]string{
		"requestheader-username-headers":     {"X-Remote-User"},
		"requestheader-uid-headers":          {"X-Remote-Uid"},
		"requestheader-group-headers":        {"X-Remote-Group"},
		"requestheader-extra-headers-prefix": {"X-Remote-Extra-"},
		"requestheader-allowed-names":        i.AllowedNames,
	} {
		if v == nil {
			v = []string{}
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		d[key] = string(b)
	}
	return d, nil
}

// ensureAuthenticationConfigMap writes the ConfigMap as upstream's
// cluster authentication trust controller does: created if missing, its
// data replaced when it differs.
func (a *Aggregator) ensureAuthenticationConfigMap(ctx context.Context) error {
	data, err := a.cfg.Authentication.data()
	if err != nil {
		return err
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: AuthenticationConfigMapNamespace, Name: AuthenticationConfigMapName}, Data: data}
	_, err = a.cfg.Objects.Create(ctx, configMapsGVR, cm)
	if err == nil {
		return nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating %s/%s: %w", AuthenticationConfigMapNamespace, AuthenticationConfigMapName, err)
	}
	obj, err := a.cfg.Objects.Get(ctx, configMapsGVR, AuthenticationConfigMapNamespace, AuthenticationConfigMapName)
	if err != nil {
		return fmt.Errorf("reading %s/%s: %w", AuthenticationConfigMapNamespace, AuthenticationConfigMapName, err)
	}
	cur := obj.(*corev1.ConfigMap).DeepCopy()
	if maps.Equal(cur.Data, data) {
		return nil
	}
	cur.Data = data
	if _, err := a.cfg.Objects.Update(ctx, configMapsGVR, cur); err != nil {
		return fmt.Errorf("updating %s/%s: %w", AuthenticationConfigMapNamespace, AuthenticationConfigMapName, err)
	}
	return nil
}
