package audit

import (
	"encoding/json"
	"io"
	"mime"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

const (
	// maxBodyBytes bounds a captured request or response body. A larger
	// one is left out of the event (upstream's truncate backend drops
	// objects of big events the same way) rather than held in memory.
	maxBodyBytes = 3 << 20
	// maxStatusBytes is enough of an error response for its Status.
	maxStatusBytes = 4 << 10
)

// capture keeps up to max bytes written to it; past that it remembers
// only that it overflowed.
type capture struct {
	max      int
	buf      []byte
	overflow bool
	// decoder turns a protobuf body into an object to log as JSON; nil
	// for JSON bodies.
	decoder runtime.Decoder
}

func (c *capture) Write(b []byte) (int, error) {
	if c.overflow || len(c.buf)+len(b) > c.max {
		c.overflow, c.buf = true, nil
		return len(b), nil
	}
	c.buf = append(c.buf, b...)
	return len(b), nil
}

// json is the captured body if it is whole, valid JSON: the event embeds
// it as is, so anything else would corrupt the log line.
func (c *capture) json() ([]byte, bool) {
	if c.overflow || len(c.buf) == 0 {
		return nil, false
	}
	if c.decoder != nil {
		obj, _, err := c.decoder.Decode(c.buf, nil, nil)
		if err != nil {
			return nil, false
		}
		out, err := json.Marshal(obj)
		return out, err == nil
	}
	if !json.Valid(c.buf) {
		return nil, false
	}
	return c.buf, true
}

// object is the captured request body for the event, with
// metadata.managedFields removed when the policy says so.
func (c *capture) object(omitManagedFields bool) ([]byte, bool) {
	raw, ok := c.json()
	if !ok || !omitManagedFields {
		return raw, ok
	}
	var obj map[string]any
	if json.Unmarshal(raw, &obj) != nil {
		return raw, true // a list or a JSON patch: nothing to omit
	}
	if md, ok := obj["metadata"].(map[string]any); ok {
		if _, has := md["managedFields"]; has {
			delete(md, "managedFields")
			if out, err := json.Marshal(obj); err == nil {
				return out, true
			}
		}
	}
	return raw, true
}

// status decodes the captured body as an error Status.
func (c *capture) status() (*metav1.Status, bool) {
	raw, ok := c.json()
	if !ok {
		return nil, false
	}
	var s metav1.Status
	if json.Unmarshal(raw, &s) != nil || s.Kind != "Status" {
		return nil, false
	}
	return &metav1.Status{Status: s.Status, Message: s.Message, Reason: s.Reason, Details: s.Details, Code: s.Code}, true
}

func unknown(raw []byte) *runtime.Unknown {
	return &runtime.Unknown{Raw: raw, ContentType: runtime.ContentTypeJSON}
}

// teeBody copies what the handler reads of the request body into c; the
// handler reads it once anyway, so capturing costs a copy, not a read.
type teeBody struct {
	io.ReadCloser
	c *capture
}

func (t *teeBody) Read(p []byte) (int, error) {
	n, err := t.ReadCloser.Read(p)
	if n > 0 {
		t.c.Write(p[:n])
	}
	return n, err
}

// newCapture returns a capture for a body of contentType, or nil for a
// type the event cannot hold: JSON (application/json and the +json patch
// types) is kept as is, protobuf is decoded with protobuf (built-in
// types) and logged as JSON, as upstream logs objects; YAML is not logged.
func newCapture(contentType string, max int, protobuf runtime.Decoder) *capture {
	if contentType == "" {
		return nil
	}
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return nil
	}
	switch {
	case mt == "application/json" || strings.HasSuffix(mt, "+json"):
		return &capture{max: max}
	case mt == "application/vnd.kubernetes.protobuf" && protobuf != nil:
		return &capture{max: max, decoder: protobuf}
	}
	return nil
}
