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
	if c.overflow || len(c.buf) == 0 || !json.Valid(c.buf) {
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

// isJSON reports whether a Content-Type is JSON (application/json and the
// +json patch types); YAML and protobuf bodies are not logged.
func isJSON(contentType string) bool {
	if contentType == "" {
		return false
	}
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	return mt == "application/json" || strings.HasSuffix(mt, "+json")
}
