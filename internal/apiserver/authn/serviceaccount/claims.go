package serviceaccount

import (
	"errors"
	"strings"

	"github.com/go-jose/go-jose/v4/jwt"
)

// LegacyIssuer is the issuer of Secret-based tokens, as upstream.
const LegacyIssuer = "kubernetes/serviceaccount"

// Names of users, groups and user extras, as upstream spells them so RBAC
// bindings and audit policies written for a stock cluster match.
const (
	UsernamePrefix        = "system:serviceaccount:"
	AllServiceAccounts    = "system:serviceaccounts"
	GroupPrefix           = "system:serviceaccounts:"
	ExtraPodName          = "authentication.kubernetes.io/pod-name"
	ExtraPodUID           = "authentication.kubernetes.io/pod-uid"
	ExtraNodeName         = "authentication.kubernetes.io/node-name"
	ExtraNodeUID          = "authentication.kubernetes.io/node-uid"
	ExtraCredentialID     = "authentication.kubernetes.io/credential-id"
	credentialIDJTIPrefix = "JTI="
)

// Username is the user name of ServiceAccount ns/name.
func Username(ns, name string) string { return UsernamePrefix + ns + ":" + name }

// SplitUsername is the inverse of Username.
func SplitUsername(user string) (ns, name string, err error) {
	rest, ok := strings.CutPrefix(user, UsernamePrefix)
	if !ok {
		return "", "", errors.New("username must be in the form system:serviceaccount:namespace:name")
	}
	ns, name, ok = strings.Cut(rest, ":")
	if !ok || ns == "" || name == "" || strings.Contains(name, ":") {
		return "", "", errors.New("username must be in the form system:serviceaccount:namespace:name")
	}
	return ns, name, nil
}

// ref names an object a token is bound to.
type ref struct {
	Name string `json:"name,omitempty"`
	UID  string `json:"uid,omitempty"`
}

// kubernetesClaims are the bound token's "kubernetes.io" claim.
type kubernetesClaims struct {
	Namespace string           `json:"namespace,omitempty"`
	Svcacct   ref              `json:"serviceaccount,omitempty"`
	Pod       *ref             `json:"pod,omitempty"`
	Secret    *ref             `json:"secret,omitempty"`
	Node      *ref             `json:"node,omitempty"`
	WarnAfter *jwt.NumericDate `json:"warnafter,omitempty"`
}

// privateClaims are a bound token's claims beyond the registered ones.
type privateClaims struct {
	Kubernetes kubernetesClaims `json:"kubernetes.io,omitempty"`
}

// legacyClaims are a legacy token's claims beyond sub and iss.
type legacyClaims struct {
	ServiceAccountName string `json:"kubernetes.io/serviceaccount/service-account.name"`
	ServiceAccountUID  string `json:"kubernetes.io/serviceaccount/service-account.uid"`
	SecretName         string `json:"kubernetes.io/serviceaccount/secret.name"`
	Namespace          string `json:"kubernetes.io/serviceaccount/namespace"`
}
