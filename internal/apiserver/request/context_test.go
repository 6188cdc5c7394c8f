package request

import (
	"context"
	"testing"
)

func TestContextHelpers(t *testing.T) {
	ctx := context.Background()
	if _, ok := RequestInfoFrom(ctx); ok {
		t.Fatal("RequestInfoFrom on empty context reported ok")
	}
	if _, ok := UserFrom(ctx); ok {
		t.Fatal("UserFrom on empty context reported ok")
	}
	if _, ok := UserFrom(WithUser(ctx, nil)); ok {
		t.Fatal("UserFrom of a nil user reported ok")
	}
	ri := &RequestInfo{Resource: "pods"}
	u := &User{Name: "alice", Groups: []string{GroupAuthenticated}}
	ctx = WithUser(WithRequestInfo(ctx, ri), u)
	if got, ok := RequestInfoFrom(ctx); !ok || got != ri {
		t.Fatalf("RequestInfoFrom = %v, %v", got, ok)
	}
	if got, ok := UserFrom(ctx); !ok || got != u {
		t.Fatalf("UserFrom = %v, %v", got, ok)
	}
	if !u.InGroup(GroupAuthenticated) || u.InGroup(GroupMasters) {
		t.Fatal("InGroup wrong")
	}
}
