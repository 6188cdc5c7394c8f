package upstream

import (
	"context"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiadmission "k8s.io/apiserver/pkg/admission"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/warning"

	"github.com/myriad-k8s/myriad/internal/admission"
	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

// Attributes returns a's upstream form and a context in which upstream's
// warning.AddWarning reaches the request's warning sink (so a webhook's or
// a policy's warnings become the response's Warning headers). The
// upstream record shares a.Object: a mutating plugin's changes are a's.
func Attributes(ctx context.Context, a *admission.Attributes) (context.Context, apiadmission.Attributes) {
	// Upstream's plugins read the user of every request; a write the
	// server makes on its own authority has none, and is reviewed with an
	// empty one.
	var u user.Info = &user.DefaultInfo{}
	if a.User != nil {
		u = &user.DefaultInfo{Name: a.User.Name, UID: a.User.UID, Groups: a.User.Groups, Extra: a.User.Extra}
	}
	var obj, old runtime.Object
	// Upstream's attributes hold nil interfaces, never typed nils.
	if a.Object != nil {
		obj = a.Object
	}
	if a.OldObject != nil {
		old = a.OldObject
	}
	rec := apiadmission.NewAttributesRecord(obj, old, a.Kind, a.Namespace, a.Name, a.Resource, a.Subresource,
		apiadmission.Operation(a.Operation), a.Options, a.DryRun, u)
	return warning.WithWarningRecorder(ctx, warningSink{ctx}), &auditedAttributes{Attributes: rec, ctx: ctx}
}

// auditedAttributes passes the audit annotations plugins add (which
// webhook mutated the object, a policy's auditAnnotations and its
// validationActions Audit failures) to the request's audit event, as
// upstream's admission audit handler does after each plugin. Only
// Metadata-level annotations go: Myriad's audit events keep annotations
// at every level, and upstream keeps the Request-level ones (the patches
// webhooks applied) out of Metadata-level events.
type auditedAttributes struct {
	apiadmission.Attributes
	ctx context.Context
}

func (a *auditedAttributes) AddAnnotation(key, value string) error {
	return a.AddAnnotationWithLevel(key, value, auditinternal.LevelMetadata)
}

func (a *auditedAttributes) AddAnnotationWithLevel(key, value string, level auditinternal.Level) error {
	if err := a.Attributes.AddAnnotationWithLevel(key, value, level); err != nil {
		return err
	}
	if !auditinternal.LevelMetadata.Less(level) {
		request.AddAuditAnnotation(a.ctx, key, value)
	}
	return nil
}

// warningSink forwards upstream's warnings to Myriad's sink in ctx.
type warningSink struct{ ctx context.Context }

func (w warningSink) AddWarning(_, text string) { request.AddWarning(w.ctx, text) }

// ObjectInterfaces are upstream's over scheme, with a converter that
// copies between objects of one type (see objectConvertor).
func ObjectInterfaces(scheme *runtime.Scheme) apiadmission.ObjectInterfaces {
	return &apiadmission.RuntimeObjectInterfaces{
		ObjectCreater:            objectCreater{scheme},
		ObjectTyper:              scheme,
		ObjectDefaulter:          scheme,
		ObjectConvertor:          objectConvertor{scheme},
		EquivalentResourceMapper: runtime.NewEquivalentResourceRegistry(),
	}
}

// objectCreater is the scheme's, and makes an empty object of a's own type
// for a kind the scheme does not know (custom resources are Unstructured).
type objectCreater struct{ scheme *runtime.Scheme }

func (c objectCreater) New(gvk schema.GroupVersionKind) (runtime.Object, error) {
	obj, err := c.scheme.New(gvk)
	if err == nil || !runtime.IsNotRegisteredError(err) {
		return obj, err
	}
	u := &unstructured.Unstructured{}
	u.GetObjectKind().SetGroupVersionKind(gvk)
	return u, nil
}

// objectConvertor converts the only way Myriad needs: an object into
// another of the same Go type (upstream's webhooks copy the versioned
// object they patched back into the one being admitted, and make the
// versioned one as a copy of it). Myriad serves each resource in one
// version, so there is never a version to convert between. out keeps its
// own apiVersion and kind, so the admitted object's TypeMeta is unchanged.
type objectConvertor struct{ scheme *runtime.Scheme }

func (c objectConvertor) Convert(in, out, _ interface{}) error {
	inV, outV := reflect.ValueOf(in), reflect.ValueOf(out)
	if inV.Type() != outV.Type() || inV.Kind() != reflect.Pointer {
		return c.scheme.Convert(in, out, nil)
	}
	ro, ok := in.(runtime.Object)
	if !ok {
		return fmt.Errorf("converting %T: not an object", in)
	}
	var gvk schema.GroupVersionKind
	outObj, outIsObj := out.(runtime.Object)
	if outIsObj {
		gvk = outObj.GetObjectKind().GroupVersionKind()
	}
	outV.Elem().Set(reflect.ValueOf(ro.DeepCopyObject()).Elem())
	if outIsObj && !gvk.Empty() {
		outObj.GetObjectKind().SetGroupVersionKind(gvk)
	} else if outIsObj {
		outObj.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	}
	return nil
}

func (c objectConvertor) ConvertToVersion(in runtime.Object, gv runtime.GroupVersioner) (runtime.Object, error) {
	return c.scheme.ConvertToVersion(in, gv)
}

func (c objectConvertor) ConvertFieldLabel(gvk schema.GroupVersionKind, label, value string) (string, string, error) {
	return c.scheme.ConvertFieldLabel(gvk, label, value)
}
