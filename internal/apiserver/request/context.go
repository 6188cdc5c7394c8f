package request

import "context"

// Context keys are distinct unexported types so no other package can collide
// with them or overwrite them.
type (
	requestInfoKey struct{}
	userKey        struct{}
)

// WithRequestInfo returns a copy of ctx carrying info.
func WithRequestInfo(ctx context.Context, info *RequestInfo) context.Context {
	return context.WithValue(ctx, requestInfoKey{}, info)
}

// RequestInfoFrom returns the RequestInfo placed on ctx by WithRequestInfo.
func RequestInfoFrom(ctx context.Context) (*RequestInfo, bool) {
	info, ok := ctx.Value(requestInfoKey{}).(*RequestInfo)
	return info, ok && info != nil
}

// WithUser returns a copy of ctx carrying u.
func WithUser(ctx context.Context, u *User) context.Context {
	return context.WithValue(ctx, userKey{}, u)
}

// UserFrom returns the User placed on ctx by WithUser.
func UserFrom(ctx context.Context) (*User, bool) {
	u, ok := ctx.Value(userKey{}).(*User)
	return u, ok && u != nil
}
