package apiextensions

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/conversion"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/client-go/rest"
)

// DefaultConversionTimeout bounds one call of a conversion webhook when
// ConverterOptions.Timeout is zero. Upstream's CRD conversion has no
// timeout of its own (the request's deadline is not passed down either);
// this is the longest an API request waits for one in Myriad.
const DefaultConversionTimeout = 30 * time.Second

// ConverterOptions configure a Converter.
type ConverterOptions struct {
	// ResolveService returns the address (host:port) a webhook's service
	// reference is reached at; the API server resolves it to an endpoint.
	// Required for a webhook given by service reference.
	ResolveService func(ctx context.Context, namespace, name string, port int32) (string, error)
	// Timeout bounds one webhook call; zero means DefaultConversionTimeout.
	Timeout time.Duration
}

// Converter converts custom resources between crd's versions: strategy
// None rewrites apiVersion; Webhook sends a ConversionReview (v1, or
// v1beta1 when the CRD lists only that) over HTTPS with the CRD's caBundle.
// It is upstream's CR converter (k8s.io/apiextensions-apiserver's
// conversion package, with its checks and messages) and is safe for
// concurrent use.
type Converter struct {
	kind    string
	webhook bool
	timeout time.Duration
	// unsafe converts in place; Convert hands it a list it built itself.
	// safe copies its input first.
	unsafe, safe runtime.ObjectConvertor
}

// NewConverter builds crd's converter.
func NewConverter(crd *apiextensionsv1.CustomResourceDefinition, opts ConverterOptions) (*Converter, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultConversionTimeout
	}
	timeout := opts.Timeout
	if crd.Spec.Conversion == nil {
		// Stored CRDs are defaulted; one that is not converts as the
		// default, None (upstream's factory dereferences it unchecked).
		crd = crd.DeepCopy()
		crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}
	}
	// The wrapper is where upstream lets a server shape the webhook's REST
	// config; the timeout goes there so a hung webhook fails the call.
	wrapper := func(delegate webhook.AuthenticationInfoResolver) webhook.AuthenticationInfoResolver {
		return &webhook.AuthenticationInfoResolverDelegator{
			ClientConfigForFunc: func(hostPort string) (*rest.Config, error) {
				cfg, err := delegate.ClientConfigFor(hostPort)
				if err != nil {
					return nil, err
				}
				cfg.Timeout = timeout
				return cfg, nil
			},
			ClientConfigForServiceFunc: func(name, namespace string, port int) (*rest.Config, error) {
				cfg, err := delegate.ClientConfigForService(name, namespace, port)
				if err != nil {
					return nil, err
				}
				cfg.Timeout = timeout
				return cfg, nil
			},
		}
	}
	factory, err := conversion.NewCRConverterFactory(serviceResolver{resolve: opts.ResolveService}, wrapper)
	if err != nil {
		return nil, fmt.Errorf("apiextensions: conversion of %s: %w", crd.Name, err)
	}
	safe, unsafe, err := factory.NewConverter(crd)
	if err != nil {
		return nil, fmt.Errorf("apiextensions: conversion of %s: %w", crd.Name, err)
	}
	return &Converter{
		kind:    crd.Spec.Names.Kind,
		webhook: crd.Spec.Conversion != nil && crd.Spec.Conversion.Strategy == apiextensionsv1.WebhookConverter,
		timeout: timeout,
		unsafe:  unsafe,
		safe:    safe,
	}, nil
}

// ObjectConvertor is the converter as the runtime.ObjectConvertor that
// server-side apply's field manager (managedfields.NewDefaultCRDFieldManager)
// and codecs take: upstream's safe CR converter, which copies its input,
// converts autoscaling/v1 Scale for a scale subresource, and answers field
// label conversions. Its webhook calls carry no context (upstream's); they
// are bounded by the timeout.
func (c *Converter) ObjectConvertor() runtime.ObjectConvertor { return c.safe }

// Convert converts objs to version to, in order, in one call for a
// webhook. Objects already at to are returned as they are. Objects are
// converted in place for None; a webhook's answers replace them.
//
// One object goes to the webhook as upstream's GET does and several as its
// LIST does, so errors read as upstream's ("conversion webhook for
// group/v1, Kind=Foo failed: ...").
func (c *Converter) Convert(ctx context.Context, objs []*unstructured.Unstructured, to schema.GroupVersion) ([]*unstructured.Unstructured, error) {
	if len(objs) == 0 {
		return objs, nil
	}
	if !c.webhook {
		return c.convert(objs, to)
	}
	// Upstream's webhook call does not take a context; run it aside so a
	// cancelled request returns at once. The call itself ends within the
	// timeout.
	type result struct {
		objs []*unstructured.Unstructured
		err  error
	}
	done := make(chan result, 1)
	go func() {
		out, err := c.convert(objs, to)
		done <- result{out, err}
	}()
	select {
	case r := <-done:
		return r.objs, r.err
	case <-ctx.Done():
		return nil, fmt.Errorf("conversion webhook for %v: %w", objs[0].GroupVersionKind(), ctx.Err())
	}
}

func (c *Converter) convert(objs []*unstructured.Unstructured, to schema.GroupVersion) ([]*unstructured.Unstructured, error) {
	if len(objs) == 1 {
		out, err := c.unsafe.ConvertToVersion(objs[0], to)
		if err != nil {
			return nil, err
		}
		u, ok := out.(*unstructured.Unstructured)
		if !ok {
			return nil, fmt.Errorf("conversion of %v returned %T", objs[0].GroupVersionKind(), out)
		}
		return []*unstructured.Unstructured{u}, nil
	}
	list := &unstructured.UnstructuredList{Items: make([]unstructured.Unstructured, len(objs))}
	// The list claims the target version, as upstream's storage builds it;
	// items already there are not sent.
	list.SetGroupVersionKind(to.WithKind(c.kind + "List"))
	for i, o := range objs {
		list.Items[i] = *o
	}
	out, err := c.unsafe.ConvertToVersion(list, to)
	if err != nil {
		return nil, err
	}
	converted, ok := out.(*unstructured.UnstructuredList)
	if !ok || len(converted.Items) != len(objs) {
		return nil, fmt.Errorf("conversion of %v returned %T", list.GroupVersionKind(), out)
	}
	res := make([]*unstructured.Unstructured, len(converted.Items))
	for i := range converted.Items {
		res[i] = &converted.Items[i]
	}
	return res, nil
}

// serviceResolver adapts ConverterOptions.ResolveService to upstream's
// webhook.ServiceResolver (which has no context: the dial it serves is
// bounded by the client's timeout).
type serviceResolver struct {
	resolve func(ctx context.Context, namespace, name string, port int32) (string, error)
}

func (r serviceResolver) ResolveEndpoint(namespace, name string, port int32) (*url.URL, error) {
	if r.resolve == nil {
		return nil, fmt.Errorf("apiextensions: no resolver for service %s/%s", namespace, name)
	}
	addr, err := r.resolve(context.Background(), namespace, name, port)
	if err != nil {
		return nil, err
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil, fmt.Errorf("apiextensions: service %s/%s resolved to %q: %w", namespace, name, addr, err)
	}
	return &url.URL{Scheme: "https", Host: addr}, nil
}
