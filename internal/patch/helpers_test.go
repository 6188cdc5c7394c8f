package patch

import (
	"fmt"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
)

func want(t *testing.T, got, want interface{}) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %#v, want %#v", got, want)
	}
}

func apiequal(a, b runtime.Object) bool { return equality.Semantic.DeepEqual(a, b) }

func typeName(o runtime.Object) string { return fmt.Sprintf("%T", o) }
