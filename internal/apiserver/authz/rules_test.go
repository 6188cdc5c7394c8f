package authz

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

func TestRuleResolverUnion(t *testing.T) {
	u := &request.User{Name: "u"}
	podsRule := ResourceRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	pods := RuleResolverFunc(func(_ context.Context, _ *request.User, ns string) ([]ResourceRule, []NonResourceRule, bool, error) {
		if ns != "dev" {
			return nil, nil, false, nil
		}
		return []ResourceRule{podsRule}, nil, false, nil
	})
	failing := RuleResolverFunc(func(context.Context, *request.User, string) ([]ResourceRule, []NonResourceRule, bool, error) {
		return nil, nil, true, errors.New("role r not found")
	})
	all := []ResourceRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}}
	allPaths := []NonResourceRule{{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}}
	tests := []struct {
		name       string
		r          RuleResolver
		ns         string
		res        []ResourceRule
		nonRes     []NonResourceRule
		incomplete bool
		err        string
	}{
		{"always allow", AlwaysAllowRules(), "x", all, allPaths, false, ""},
		{"always deny", NoRules(), "x", []ResourceRule{}, []NonResourceRule{}, false, ""},
		{"empty union", RuleResolverUnion(), "x", nil, nil, false, ""},
		{"concatenated", RuleResolverUnion(pods, AlwaysAllowRules()), "dev", append([]ResourceRule{podsRule}, all...), allPaths, false, ""},
		{"namespace passed on", RuleResolverUnion(pods), "prod", nil, nil, false, ""},
		{"incomplete and error kept", RuleResolverUnion(failing, pods), "dev", []ResourceRule{podsRule}, nil, true, "role r not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, nonRes, inc, err := tt.r.RulesFor(context.Background(), u, tt.ns)
			if !reflect.DeepEqual(res, tt.res) || !reflect.DeepEqual(nonRes, tt.nonRes) || inc != tt.incomplete {
				t.Fatalf("got %v %v %v", res, nonRes, inc)
			}
			if (err == nil) != (tt.err == "") || err != nil && err.Error() != tt.err {
				t.Fatalf("err %v, want %q", err, tt.err)
			}
		})
	}
}
