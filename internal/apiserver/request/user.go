package request

// Well-known identities and groups, spelled as upstream spells them so RBAC
// bindings written for a stock cluster mean the same here.
const (
	// AnonymousUser is the name given to requests without credentials on
	// public paths.
	AnonymousUser = "system:anonymous"
	// AdminUser is the identity of the admin bearer token.
	AdminUser = "system:admin"

	// GroupMasters is upstream's superuser group: members are allowed
	// everything by the default authorizer.
	GroupMasters = "system:masters"
	// GroupAuthenticated is added to every authenticated user.
	GroupAuthenticated = "system:authenticated"
	// GroupUnauthenticated is the only group of the anonymous user.
	GroupUnauthenticated = "system:unauthenticated"
)

// User is an authenticated (or anonymous) identity. It is immutable once
// placed on a context: filters that need a different identity (impersonation)
// make a new one.
type User struct {
	// Name is the user name, e.g. "system:admin" or a client certificate's CN.
	Name string
	// UID is a stable identifier when the authenticator knows one; may be empty.
	UID string
	// Groups the user belongs to, e.g. "system:masters", "system:authenticated".
	Groups []string
	// Extra is further information the authenticator knows (a service
	// account token's pod name and uid under
	// "authentication.kubernetes.io/pod-name", impersonated extras);
	// authorizers and audit see it. May be nil.
	Extra map[string][]string
}

// InGroup reports whether u is a member of group.
func (u *User) InGroup(group string) bool {
	if u == nil {
		return false
	}
	for _, g := range u.Groups {
		if g == group {
			return true
		}
	}
	return false
}
