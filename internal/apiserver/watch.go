package apiserver

import (
	"bytes"
	"context"
	"math/rand/v2"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/myriad-k8s/myriad/internal/cache"
)

// minWatchTimeout is upstream's --min-request-timeout: watches without
// timeoutSeconds last between one and two times this, so clients spread
// their reconnects instead of all coming back at once.
const minWatchTimeout = 30 * time.Minute

func (h *resourceHandler) watch(w http.ResponseWriter, r *http.Request, ns, name string) {
	opts, label, field, err := h.listOptions(r, ns, true)
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	if name != "" {
		// Legacy /watch/namespaces/ns/pods/name.
		field = fields.AndSelectors(field, fields.OneTermEqualSelector("metadata.name", name))
	}
	choice, ok := h.negotiate(r)
	if !ok || choice.info.StreamSerializer == nil {
		h.s.writeError(w, r, apierrors.NewGenericServerResponse(http.StatusNotAcceptable, "", h.objects.gr, "", "no streaming media type is acceptable", 0, false))
		return
	}
	timeout := time.Duration(float64(minWatchTimeout) * (1 + rand.Float64()))
	if opts.TimeoutSeconds != nil && *opts.TimeoutSeconds > 0 {
		timeout = time.Duration(*opts.TimeoutSeconds) * time.Second
	}
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	deadline, _ := ctx.Deadline()

	watcher, err := h.cache.Watch(ctx, cache.WatchOptions{
		Deadline:          deadline,
		ResourceVersion:   opts.ResourceVersion,
		Namespace:         ns,
		Label:             label,
		Field:             field,
		AllowBookmarks:    opts.AllowWatchBookmarks,
		SendInitialEvents: opts.SendInitialEvents,
	})
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	defer watcher.Stop()

	flusher, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", watchContentType(choice))
	w.Header().Set("Transfer-Encoding", "chunked")
	w.WriteHeader(http.StatusOK)
	if flusher != nil {
		flusher.Flush()
	}
	frames := choice.info.StreamSerializer.Framer.NewFrameWriter(w)
	var scratch []byte // decompressing stored values
	ch := watcher.ResultChan()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-ch:
			if !ok {
				return
			}
			if !h.writeEvent(frames, choice, ev, &scratch) {
				return
			}
			// Drain whatever else is ready before flushing: one flush per
			// burst, not per event.
			for drained := false; !drained; {
				select {
				case ev, ok := <-ch:
					if !ok {
						if flusher != nil {
							flusher.Flush()
						}
						return
					}
					if !h.writeEvent(frames, choice, ev, &scratch) {
						return
					}
				default:
					drained = true
				}
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
	}
}

func watchContentType(choice mediaChoice) string {
	if choice.info.MediaType == "application/vnd.kubernetes.protobuf" {
		return "application/vnd.kubernetes.protobuf;stream=watch"
	}
	return choice.info.MediaType
}

// writeEvent writes one framed event. The frame bytes are produced once per
// event and format and shared by every watcher (serialize once); a
// protobuf watcher of a resource whose stored bytes are its encoding gets
// them passed through, without a decode.
func (h *resourceHandler) writeEvent(frames interface{ Write([]byte) (int, error) }, choice mediaChoice, ev *cache.Event, scratch *[]byte) bool {
	data, err := ev.Encoded(choice.memoKey(), func() ([]byte, error) {
		if ev.Stored != nil && h.watchesStored(choice) {
			return h.storedWatchEvent(ev, choice, scratch)
		}
		obj, err := ev.Object()
		if err != nil {
			return nil, err
		}
		return h.encodeWatchEvent(choice, ev.Type, obj)
	})
	if err != nil {
		h.s.log.Warn("encoding watch event failed", "resource", h.res.Resource, "err", err)
		return false
	}
	if ev.Type != watch.Bookmark {
		gvr := h.res.GroupVersionResource()
		h.s.serverMetrics.watchEvents.WithLabelValues(gvr.Group, gvr.Version, gvr.Resource).Inc()
		h.s.serverMetrics.watchEventBytes.WithLabelValues(gvr.Group, gvr.Version, gvr.Resource).Observe(float64(len(data)))
	}
	_, err = frames.Write(data)
	return err == nil
}

// encodeWatchEvent encodes a metav1.WatchEvent whose object is obj in the
// negotiated shape (upstream embeds the object encoded with the full
// serializer inside the stream serializer's envelope).
func (h *resourceHandler) encodeWatchEvent(choice mediaChoice, typ watch.EventType, obj runtime.Object) ([]byte, error) {
	if typ != watch.Error && (typ != watch.Bookmark || choice.kind == outputMetadata) {
		out, err := h.transform(choice, obj)
		if err != nil {
			return nil, err
		}
		obj = out
	}
	var inner bytes.Buffer
	if err := choice.info.Serializer.Encode(obj, &inner); err != nil {
		return nil, err
	}
	outer := &metav1.WatchEvent{Type: string(typ), Object: runtime.RawExtension{Raw: inner.Bytes()}}
	var buf bytes.Buffer
	if err := choice.info.StreamSerializer.Serializer.Encode(outer, &buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
