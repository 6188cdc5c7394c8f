package apiserver

import (
	"mime"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
)

// outputKind says what shape a response takes besides its wire format.
type outputKind int

const (
	outputObject   outputKind = iota // the object (or list) itself
	outputTable                      // meta.k8s.io/v1 Table, for kubectl get
	outputMetadata                   // meta.k8s.io/v1 PartialObjectMetadata(List)
)

// mediaChoice is the negotiated response format.
type mediaChoice struct {
	info   runtime.SerializerInfo
	kind   outputKind
	pretty bool
	// includeObject for tables: "None", "Metadata" (default) or "Object".
	includeObject string
}

// memoKey names an encoding for the serialize-once cache of watch events.
func (m mediaChoice) memoKey() string {
	return m.info.MediaType + "|" + strconv.Itoa(int(m.kind)) + "|" + m.includeObject
}

type acceptClause struct {
	typ, subtype string
	params       map[string]string
	q            float64
	order        int
}

func parseAccept(header string) []acceptClause {
	var out []acceptClause
	for i, part := range strings.Split(header, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		mt, params, err := mime.ParseMediaType(part)
		if err != nil {
			continue
		}
		typ, sub, _ := strings.Cut(mt, "/")
		q := 1.0
		if v, ok := params["q"]; ok {
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				q = f
			}
		}
		out = append(out, acceptClause{typ: typ, subtype: sub, params: params, q: q, order: i})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].q > out[j].q })
	return out
}

// negotiateOutput picks the response media type for r from the Accept header.
// allowTransforms is false where Table/metadata output makes no sense (e.g.
// status subresource errors); ok is false when nothing acceptable is served.
func (s *Server) negotiateOutput(r *http.Request, allowTransforms bool) (mediaChoice, bool) {
	return s.negotiateMedia(r, allowTransforms, true)
}

// negotiateMedia is negotiateOutput for a resource whose objects may have
// no protobuf encoding (objectProtobuf false: custom resources, which
// upstream serves as JSON and YAML only; their Tables and metadata still
// go in any format the transform allows).
func (s *Server) negotiateMedia(r *http.Request, allowTransforms, objectProtobuf bool) (mediaChoice, bool) {
	accept := r.Header.Get("Accept")
	pretty := r.URL.Query().Get("pretty") == "true" || r.URL.Query().Get("pretty") == "1"
	if accept == "" {
		return mediaChoice{info: s.codecs.json, pretty: pretty}, true
	}
	for _, c := range parseAccept(accept) {
		info, ok := s.codecs.byType(c.typ, c.subtype)
		if !ok {
			continue
		}
		choice := mediaChoice{info: info, pretty: pretty}
		as := c.params["as"]
		if as == "" && !objectProtobuf && info.MediaType == runtime.ContentTypeProtobuf {
			continue
		}
		if as != "" {
			if !allowTransforms || c.params["g"] != "meta.k8s.io" || (c.params["v"] != "v1" && c.params["v"] != "v1beta1") {
				continue
			}
			// As upstream's AllowsMediaTypeTransform: a Table only as JSON
			// or YAML (metav1.Table has no protobuf encoding: the answer
			// would be a 200 with an empty body), metadata in any format.
			switch as {
			case "Table":
				if info.MediaType == runtime.ContentTypeProtobuf {
					continue
				}
				choice.kind = outputTable
				choice.includeObject = "Metadata"
			case "PartialObjectMetadata", "PartialObjectMetadataList":
				choice.kind = outputMetadata
			default:
				continue
			}
		}
		return choice, true
	}
	return mediaChoice{}, false
}
