package storebench

import (
	"bytes"
	"fmt"
	"math/rand/v2"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"

	"github.com/myriad-k8s/myriad/internal/bench/benchutil"
	"github.com/myriad-k8s/myriad/internal/registry"
)

// newValues returns the value of the i-th object for Config.Values.
func newValues(kind string, size int) (func(i int) []byte, error) {
	switch kind {
	case "", "random":
		return randomValues(size), nil
	case "pods":
		return podValues()
	}
	return nil, fmt.Errorf("storebench: unknown values %q (random or pods)", kind)
}

// randomValues hands out distinct, incompressible values without generating
// random bytes per write: each value is a window into 4 MiB of random data
// at an offset derived from the object index. One shared value would let the
// engine's block compression shrink the data unrealistically.
func randomValues(size int) func(int) []byte {
	data := make([]byte, 4<<20+size)
	for i := range data {
		data[i] = byte(rand.Uint32())
	}
	return func(i int) []byte {
		off := int(uint64(i) * 0x9e3779b97f4a7c15 % uint64(len(data)-size+1))
		return data[off : off+size]
	}
}

// podValues encodes the i-th benchutil.StoredPod (about 1.5 KB) as the API
// server stores it: protobuf in its runtime.Unknown envelope.
func podValues() (func(int) []byte, error) {
	scheme, err := registry.NewScheme()
	if err != nil {
		return nil, err
	}
	codec := protobuf.NewSerializer(scheme, scheme)
	return func(i int) []byte {
		var buf bytes.Buffer
		pod := benchutil.StoredPod(i, fmt.Sprintf("ns-%03d", i%100), 10000)
		if err := codec.Encode(runtime.Object(pod), &buf); err != nil {
			panic(err) // a Pod built here always encodes
		}
		return buf.Bytes()
	}, nil
}
