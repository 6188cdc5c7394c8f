package sim

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// envelopeDecoder decodes protobuf watch event envelopes without copying
// the event's object bytes; anything else goes to the wrapped decoder.
//
// client-go decodes a watch frame into a metav1.WatchEvent, whose generated
// Unmarshal copies the object's bytes out of the frame, then decodes those
// bytes and drops them. Through the decodeCache the proxies' watches decode
// a shared event's object once, so that copy, 10,000 times per
// EndpointSlice change, became a quarter of the simulator's allocations.
// Here the event's Object.Raw is a slice of the frame instead: client-go
// decodes it before it reads the next frame into the same buffer, and the
// decoders copy what they keep.
type envelopeDecoder struct {
	k8sruntime.Serializer
}

func (d envelopeDecoder) Decode(data []byte, defaults *schema.GroupVersionKind, into k8sruntime.Object) (k8sruntime.Object, *schema.GroupVersionKind, error) {
	ev, ok := into.(*metav1.WatchEvent)
	if !ok {
		return d.Serializer.Decode(data, defaults, into)
	}
	if len(data) == 0 {
		return nil, nil, errors.New("empty watch event frame")
	}
	if err := unmarshalWatchEvent(data, ev); err != nil {
		return nil, nil, err
	}
	return ev, &schema.GroupVersionKind{}, nil
}

// unmarshalWatchEvent is metav1.WatchEvent's protobuf Unmarshal, with
// ev.Object.Raw pointing into b.
func unmarshalWatchEvent(b []byte, ev *metav1.WatchEvent) error {
	*ev = metav1.WatchEvent{}
	return bytesFields(b, "watch event", 2, func(num protowire.Number, v []byte) error {
		if num == 1 {
			ev.Type = string(v)
			return nil
		}
		// Object, a RawExtension: its one field is the bytes. Repeated
		// occurrences of a message field merge, so the last bytes win.
		return bytesFields(v, "watch event object", 1, func(_ protowire.Number, raw []byte) error {
			if raw == nil {
				raw = []byte{}
			}
			ev.Object.Raw = raw
			return nil
		})
	})
}

// bytesFields calls field with the value of each field of message b
// numbered 1 to last, all of which must have the bytes wire type, and skips
// the others. what names the message in errors.
func bytesFields(b []byte, what string, last protowire.Number, field func(protowire.Number, []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("%s: %w", what, protowire.ParseError(n))
		}
		b = b[n:]
		if num > last {
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return fmt.Errorf("%s field %d: %w", what, num, protowire.ParseError(n))
			}
			b = b[n:]
			continue
		}
		if typ != protowire.BytesType {
			return fmt.Errorf("%s field %d: wire type %d, want bytes", what, num, typ)
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return fmt.Errorf("%s field %d: %w", what, num, protowire.ParseError(n))
		}
		b = b[n:]
		if err := field(num, v); err != nil {
			return err
		}
	}
	return nil
}
