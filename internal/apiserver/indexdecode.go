package apiserver

import (
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/myriad-k8s/myriad/internal/protoprune"
	"github.com/myriad-k8s/myriad/internal/registry"
	"github.com/myriad-k8s/myriad/internal/storage"
)

// objectMetaManagedFields is metadata.managedFields' field number in
// ObjectMeta's protobuf message.
const objectMetaManagedFields = 17

// indexSkip is what decodeForIndex leaves out of a resource's objects:
// metadata.managedFields (field 1 is the ObjectMeta) and the resource's
// own IndexSkip.
func indexSkip(res *registry.Resource) *protoprune.Plan {
	skip := protoprune.Fields{1: {objectMetaManagedFields: nil}}
	for num, sub := range res.IndexSkip {
		if num == 1 {
			panic("registry: IndexSkip of " + res.Resource + " names metadata, which the index reads")
		}
		skip[num] = sub
	}
	return protoprune.Compile(skip)
}

// decodeForIndex is decode without what the watch cache's index never
// reads (indexSkip), for the cache, which decodes every object only to
// index its labels and fields: in a typical stored pod managedFields are
// a third of the bytes, and containers and their statuses most of what
// decoding the rest allocates.
func (o *objectStore) decodeForIndex(kv storage.KeyValue) (runtime.Object, error) {
	return o.decodePruned(kv, o.indexSkip)
}

// decodePruned is decode without the fields skip drops (a compiled
// protoprune.Fields of the kind's protobuf message). A value it cannot take apart (another
// layout, damage) goes through decode, which reports it.
func (o *objectStore) decodePruned(kv storage.KeyValue, skip *protoprune.Plan) (runtime.Object, error) {
	if !o.metaField1 {
		return o.decode(kv)
	}
	obj := o.res.New()
	u, ok := obj.(interface{ Unmarshal([]byte) error })
	if !ok {
		return o.decode(kv)
	}
	msg, err := unknownRaw(kv.Value)
	if err != nil {
		return o.decode(kv)
	}
	// Unmarshal copies what it keeps: the buffer is free again after it.
	bufp, _ := o.pruneBufs.Get().(*[]byte)
	if bufp == nil {
		bufp = new([]byte)
	}
	defer o.pruneBufs.Put(bufp)
	pruned, ok := skip.Append((*bufp)[:0], msg)
	*bufp = pruned
	if !ok {
		return o.decode(kv)
	}
	if err := u.Unmarshal(pruned); err != nil {
		return nil, corruptValue(kv, err)
	}
	return o.withRevision(obj, kv.ModRevision)
}
