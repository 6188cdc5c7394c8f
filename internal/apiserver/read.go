package apiserver

import (
	"net/http"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/myriad-k8s/myriad/internal/cache"
)

func (h *resourceHandler) get(w http.ResponseWriter, r *http.Request, ns, name string) {
	opts := metav1.GetOptions{}
	if err := h.s.paramCodec.DecodeParameters(r.URL.Query(), optionsVersion, &opts); err != nil {
		h.s.writeError(w, r, apierrors.NewBadRequest(err.Error()))
		return
	}
	obj, err := h.cache.Get(r.Context(), h.objects.key(ns, name), opts.ResourceVersion)
	if err != nil {
		h.s.writeError(w, r, h.cacheError(err, name))
		return
	}
	h.respond(w, r, http.StatusOK, obj)
}

// cacheError maps the cache's not-found sentinel to the resource's 404.
func (h *resourceHandler) cacheError(err error, name string) error {
	if cache.IsNotFound(err) {
		return apierrors.NewNotFound(h.objects.gr, name)
	}
	return err
}

// listOptions parses and checks list/watch query parameters.
func (h *resourceHandler) listOptions(r *http.Request, ns string, watch bool) (metav1.ListOptions, labels.Selector, fields.Selector, error) {
	var opts metav1.ListOptions
	if err := h.s.paramCodec.DecodeParameters(r.URL.Query(), optionsVersion, &opts); err != nil {
		return opts, nil, nil, apierrors.NewBadRequest(err.Error())
	}
	label := labels.Everything()
	if opts.LabelSelector != "" {
		sel, err := labels.Parse(opts.LabelSelector)
		if err != nil {
			return opts, nil, nil, apierrors.NewBadRequest("unable to parse requirement: " + err.Error())
		}
		label = sel
	}
	field := fields.Everything()
	if opts.FieldSelector != "" {
		sel, err := fields.ParseSelector(opts.FieldSelector)
		if err != nil {
			return opts, nil, nil, apierrors.NewBadRequest(err.Error())
		}
		supported := h.selectableFieldNames()
		for _, req := range sel.Requirements() {
			if !supported[req.Field] {
				return opts, nil, nil, apierrors.NewBadRequest(`"` + req.Field + `" is not a known field selector: only "` + strings.Join(sortedKeys(supported), `", "`) + `"`)
			}
		}
		field = sel
	}
	if err := validateRVMatch(opts, watch); err != nil {
		return opts, nil, nil, err
	}
	return opts, label, field, nil
}

// validateRVMatch checks resourceVersion, resourceVersionMatch, continue
// and sendInitialEvents together, as upstream's ValidateListOptions.
// validateRVMatch checks the resourceVersion options of a list or watch as
// upstream's ValidateListOptions does, answering 422 Invalid on ListOptions.
func validateRVMatch(opts metav1.ListOptions, watch bool) error {
	var errs field.ErrorList
	matchPath := field.NewPath("resourceVersionMatch")
	match := opts.ResourceVersionMatch
	switch {
	case watch:
		if opts.SendInitialEvents != nil {
			// A watch-list (client-go's WatchListClient): resourceVersion
			// may be empty, meaning "the latest state, then changes".
			if match != metav1.ResourceVersionMatchNotOlderThan {
				errs = append(errs, field.Forbidden(matchPath, "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"))
			}
			if !opts.AllowWatchBookmarks {
				errs = append(errs, field.Forbidden(field.NewPath("allowWatchBookmarks"), "sendInitialEvents requires setting allowWatchBookmarks to true"))
			}
		} else if match != "" {
			errs = append(errs, field.Forbidden(matchPath, "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"))
		}
		if match != "" && match != metav1.ResourceVersionMatchNotOlderThan {
			errs = append(errs, field.NotSupported(matchPath, match, []string{string(metav1.ResourceVersionMatchNotOlderThan)}))
		}
	default:
		if match != "" {
			if opts.ResourceVersion == "" {
				errs = append(errs, field.Forbidden(matchPath, "resourceVersionMatch is forbidden unless resourceVersion is provided"))
			}
			if opts.Continue != "" {
				errs = append(errs, field.Forbidden(matchPath, "resourceVersionMatch is forbidden when continue is provided"))
			}
			if match != metav1.ResourceVersionMatchExact && match != metav1.ResourceVersionMatchNotOlderThan {
				errs = append(errs, field.NotSupported(matchPath, match, []string{string(metav1.ResourceVersionMatchExact), string(metav1.ResourceVersionMatchNotOlderThan), ""}))
			}
			if match == metav1.ResourceVersionMatchExact && opts.ResourceVersion == "0" {
				errs = append(errs, field.Forbidden(matchPath, "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\""))
			}
		}
		if opts.SendInitialEvents != nil {
			errs = append(errs, field.Forbidden(field.NewPath("sendInitialEvents"), "sendInitialEvents is forbidden for list"))
		}
	}
	if len(errs) > 0 {
		return apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "ListOptions"}, "", errs)
	}
	if opts.Continue != "" && opts.ResourceVersion != "" && opts.ResourceVersion != "0" {
		return apierrors.NewBadRequest("specifying resource version is not allowed when using continue")
	}
	return nil
}

// selectableFieldNames are the fields this resource can be selected by.
func (h *resourceHandler) selectableFieldNames() map[string]bool {
	names := map[string]bool{"metadata.name": true}
	if h.res.Namespaced {
		names["metadata.namespace"] = true
	}
	if h.res.SelectableFields != nil {
		for k := range h.res.SelectableFields(h.res.New()) {
			names[k] = true
		}
	}
	return names
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// attrs are the labels and fields the cache filters obj by.
func (h *resourceHandler) attrs(obj runtime.Object) (labels.Set, fields.Set) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, nil
	}
	fs := fields.Set{}
	if h.res.SelectableFields != nil {
		fs = h.res.SelectableFields(obj)
		if fs == nil {
			fs = fields.Set{}
		}
	}
	fs["metadata.name"] = m.GetName()
	if h.res.Namespaced {
		fs["metadata.namespace"] = m.GetNamespace()
	}
	return labels.Set(m.GetLabels()), fs
}

func (h *resourceHandler) list(w http.ResponseWriter, r *http.Request, ns string) {
	opts, label, field, err := h.listOptions(r, ns, false)
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	choice, ok := h.negotiate(r)
	if !ok {
		h.s.writeError(w, r, apierrors.NewGenericServerResponse(http.StatusNotAcceptable, "", h.objects.gr, "", "unsupported Accept header", 0, false))
		return
	}
	copts := cache.ListOptions{
		ResourceVersion:      opts.ResourceVersion,
		ResourceVersionMatch: opts.ResourceVersionMatch,
		Namespace:            ns,
		Label:                label,
		Field:                field,
		Limit:                opts.Limit,
		Continue:             opts.Continue,
	}
	if h.streamable(choice) {
		if err := h.streamList(w, r, choice, copts); err != nil {
			h.s.writeError(w, r, err)
		}
		return
	}
	var items []runtime.Object
	res, err := h.cache.List(r.Context(), copts, func(obj runtime.Object) error {
		items = append(items, obj)
		return r.Context().Err()
	})
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	listMeta := metav1.ListMeta{ResourceVersion: res.ResourceVersion, Continue: res.Continue, RemainingItemCount: res.RemainingItemCount}
	out, err := h.listObject(choice, listMeta, items)
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	h.s.writeObject(w, r, http.StatusOK, choice, out)
}

// listObject builds the response list in the negotiated shape. Items are
// the cache's shared objects: they are placed, never mutated.
func (h *resourceHandler) listObject(choice mediaChoice, lm metav1.ListMeta, items []runtime.Object) (runtime.Object, error) {
	switch choice.kind {
	case outputTable:
		t := h.newTable()
		t.ListMeta = lm
		t.Rows = make([]metav1.TableRow, 0, len(items))
		for _, obj := range items {
			row, err := h.tableRow(choice, obj)
			if err != nil {
				return nil, err
			}
			t.Rows = append(t.Rows, row)
		}
		return t, nil
	case outputMetadata:
		l := &metav1.PartialObjectMetadataList{TypeMeta: partialListTypeMeta, ListMeta: lm}
		l.Items = make([]metav1.PartialObjectMetadata, 0, len(items))
		for _, obj := range items {
			pm, err := partialMetadata(obj)
			if err != nil {
				return nil, err
			}
			l.Items = append(l.Items, *pm)
		}
		return l, nil
	}
	return h.typedList(items, lm)
}

// typedList is the resource's own list kind holding items, with lm's
// resourceVersion, continue token and remaining count.
func (h *resourceHandler) typedList(items []runtime.Object, lm metav1.ListMeta) (runtime.Object, error) {
	list := h.res.NewList()
	gvk := h.res.GroupVersion.WithKind(h.res.Kind + "List")
	list.GetObjectKind().SetGroupVersionKind(gvk)
	if err := meta.SetList(list, items); err != nil {
		return nil, err
	}
	la, err := meta.ListAccessor(list)
	if err != nil {
		return nil, err
	}
	la.SetResourceVersion(lm.ResourceVersion)
	la.SetContinue(lm.Continue)
	la.SetRemainingItemCount(lm.RemainingItemCount)
	return list, nil
}
