package registry

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// maxDataSize is upstream's MaxSecretSize, the limit on a config map's or
// secret's total data; it keeps each object well under etcd's value limit.
const maxDataSize = 1 * 1024 * 1024

const immutableMsg = "field is immutable when `immutable` is set"

func isImmutable(b *bool) bool { return b != nil && *b }

func configMapResource(c clock) *Resource {
	gv := v1(coreGroup)
	s := strategy[*corev1.ConfigMap]{behavior[*corev1.ConfigMap]{
		namespaced:     true,
		name:           apivalidation.NameIsDNSSubdomain,
		validate:       validateConfigMap,
		validateUpdate: validateConfigMapUpdate,
	}}
	return &Resource{
		GroupVersion:     gv,
		Kind:             "ConfigMap",
		Resource:         "configmaps",
		SingularName:     "configmap",
		Namespaced:       true,
		ShortNames:       []string{"cm"},
		Verbs:            allVerbs(),
		New:              func() runtime.Object { return &corev1.ConfigMap{} },
		NewList:          func() runtime.Object { return &corev1.ConfigMapList{} },
		Strategy:         s,
		SelectableFields: func(runtime.Object) fields.Set { return fields.Set{} },
		Table: table[*corev1.ConfigMap]{
			columns: []metav1.TableColumnDefinition{nameColumn(), col("Data", "string", corev1.ConfigMap{}.SwaggerDoc()["data"]), ageColumn()},
			cells: func(cm *corev1.ConfigMap) []interface{} {
				return []interface{}{cm.Name, int64(len(cm.Data) + len(cm.BinaryData)), c.since(cm.CreationTimestamp)}
			},
		},
		StorageKeyPrefix: storagePrefix(gv, "configmaps"),
	}
}

func validateConfigMap(cm *corev1.ConfigMap) field.ErrorList {
	var errs field.ErrorList
	size := 0
	for k, v := range cm.Data {
		kp := field.NewPath("data").Key(k)
		for _, msg := range validation.IsConfigMapKey(k) {
			errs = append(errs, field.Invalid(kp, k, msg))
		}
		if _, dup := cm.BinaryData[k]; dup {
			errs = append(errs, field.Invalid(kp, k, "duplicate of key present in binaryData"))
		}
		size += len(v)
	}
	for k, v := range cm.BinaryData {
		for _, msg := range validation.IsConfigMapKey(k) {
			errs = append(errs, field.Invalid(field.NewPath("binaryData").Key(k), k, msg))
		}
		size += len(v)
	}
	if size > maxDataSize {
		// The empty path means "the whole object", as upstream reports it.
		errs = append(errs, field.TooLong(field.NewPath(""), "", maxDataSize))
	}
	return errs
}

func validateConfigMapUpdate(obj, old *corev1.ConfigMap) field.ErrorList {
	if !isImmutable(old.Immutable) {
		return nil
	}
	var errs field.ErrorList
	if !isImmutable(obj.Immutable) {
		errs = append(errs, field.Forbidden(field.NewPath("immutable"), immutableMsg))
	}
	if !maps.Equal(obj.Data, old.Data) {
		errs = append(errs, field.Forbidden(field.NewPath("data"), immutableMsg))
	}
	if semanticChanged(obj.BinaryData, old.BinaryData) {
		errs = append(errs, field.Forbidden(field.NewPath("binaryData"), immutableMsg))
	}
	return errs
}

func secretResource(c clock) *Resource {
	gv := v1(coreGroup)
	s := strategy[*corev1.Secret]{behavior[*corev1.Secret]{
		namespaced:     true,
		name:           apivalidation.NameIsDNSSubdomain,
		defaults:       defaultSecret,
		validate:       validateSecret,
		validateUpdate: validateSecretUpdate,
	}}
	return &Resource{
		GroupVersion:     gv,
		Kind:             "Secret",
		Resource:         "secrets",
		SingularName:     "secret",
		Namespaced:       true,
		Verbs:            allVerbs(),
		New:              func() runtime.Object { return &corev1.Secret{} },
		NewList:          func() runtime.Object { return &corev1.SecretList{} },
		Strategy:         s,
		SelectableFields: func(o runtime.Object) fields.Set { return fields.Set{"type": string(o.(*corev1.Secret).Type)} },
		Table: table[*corev1.Secret]{
			columns: []metav1.TableColumnDefinition{
				nameColumn(),
				col("Type", "string", corev1.Secret{}.SwaggerDoc()["type"]),
				col("Data", "string", corev1.Secret{}.SwaggerDoc()["data"]),
				ageColumn(),
			},
			cells: func(s *corev1.Secret) []interface{} {
				return []interface{}{s.Name, string(s.Type), int64(len(s.Data)), c.since(s.CreationTimestamp)}
			},
		},
		StorageKeyPrefix: storagePrefix(gv, "secrets"),
	}
}

// defaultSecret is SetDefaults_Secret plus what upstream's v1 conversion
// does with stringData: it is write-only, merged into data (winning on
// conflicts) and never stored.
func defaultSecret(s *corev1.Secret) {
	if s.Type == "" {
		s.Type = corev1.SecretTypeOpaque
	}
	if len(s.StringData) > 0 && s.Data == nil {
		s.Data = make(map[string][]byte, len(s.StringData))
	}
	for k, v := range s.StringData {
		s.Data[k] = []byte(v)
	}
	s.StringData = nil
}

func validateSecret(s *corev1.Secret) field.ErrorList {
	var errs field.ErrorList
	dp := field.NewPath("data")
	size := 0
	for k, v := range s.Data {
		for _, msg := range validation.IsConfigMapKey(k) {
			errs = append(errs, field.Invalid(dp.Key(k), k, msg))
		}
		size += len(v)
	}
	if size > maxDataSize {
		errs = append(errs, field.TooLong(dp, "", maxDataSize))
	}
	requireKey := func(k string) {
		if _, ok := s.Data[k]; !ok {
			errs = append(errs, field.Required(dp.Key(k), ""))
		}
	}
	switch s.Type {
	case corev1.SecretTypeServiceAccountToken:
		if s.Annotations[corev1.ServiceAccountNameKey] == "" {
			errs = append(errs, field.Required(field.NewPath("metadata", "annotations").Key(corev1.ServiceAccountNameKey), ""))
		}
	case corev1.SecretTypeDockercfg:
		requireKey(corev1.DockerConfigKey)
	case corev1.SecretTypeDockerConfigJson:
		requireKey(corev1.DockerConfigJsonKey)
	case corev1.SecretTypeBasicAuth:
		_, u := s.Data[corev1.BasicAuthUsernameKey]
		_, p := s.Data[corev1.BasicAuthPasswordKey]
		if !u && !p {
			errs = append(errs, field.Required(dp.Key(corev1.BasicAuthUsernameKey), ""), field.Required(dp.Key(corev1.BasicAuthPasswordKey), ""))
		}
	case corev1.SecretTypeSSHAuth:
		requireKey(corev1.SSHAuthPrivateKey)
	case corev1.SecretTypeTLS:
		requireKey(corev1.TLSCertKey)
		requireKey(corev1.TLSPrivateKeyKey)
	}
	return errs
}

func validateSecretUpdate(obj, old *corev1.Secret) field.ErrorList {
	errs := immutable(obj.Type, old.Type, field.NewPath("type"))
	if isImmutable(old.Immutable) {
		if !isImmutable(obj.Immutable) {
			errs = append(errs, field.Forbidden(field.NewPath("immutable"), immutableMsg))
		}
		if semanticChanged(obj.Data, old.Data) {
			errs = append(errs, field.Forbidden(field.NewPath("data"), immutableMsg))
		}
	}
	return errs
}
