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
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("watch event: %w", protowire.ParseError(n))
		}
		b = b[n:]
		if num == 1 || num == 2 {
			if typ != protowire.BytesType {
				return fmt.Errorf("watch event field %d: wire type %d, want bytes", num, typ)
			}
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return fmt.Errorf("watch event field %d: %w", num, protowire.ParseError(n))
			}
			b = b[n:]
			if num == 1 {
				ev.Type = string(v)
				continue
			}
			// Repeated occurrences of a message field merge; RawExtension's
			// one field is bytes, so the last one wins.
			if err := unmarshalRawExtension(v, &ev.Object); err != nil {
				return err
			}
			continue
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return fmt.Errorf("watch event field %d: %w", num, protowire.ParseError(n))
		}
		b = b[n:]
	}
	return nil
}

// unmarshalRawExtension merges b, an encoded runtime.RawExtension, into r.
func unmarshalRawExtension(b []byte, r *k8sruntime.RawExtension) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("watch event object: %w", protowire.ParseError(n))
		}
		b = b[n:]
		if num == 1 {
			if typ != protowire.BytesType {
				return fmt.Errorf("watch event object: wire type %d, want bytes", typ)
			}
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return fmt.Errorf("watch event object: %w", protowire.ParseError(n))
			}
			b = b[n:]
			if v == nil {
				v = []byte{}
			}
			r.Raw = v
			continue
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return fmt.Errorf("watch event object field %d: %w", num, protowire.ParseError(n))
		}
		b = b[n:]
	}
	return nil
}
