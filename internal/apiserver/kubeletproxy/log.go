package kubeletproxy

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericrest "k8s.io/apiserver/pkg/registry/generic/rest"

	"github.com/myriad-k8s/myriad/internal/kubeletclient"
)

// ParseLogOptions decodes pods/log's query as upstream's parameter codec
// does (a malformed value is a 400) and validates it as upstream's
// ValidatePodLogOptions (a bad value is a 422 on PodLogOptions).
func ParseLogOptions(name string, q url.Values) (*corev1.PodLogOptions, error) {
	opts := &corev1.PodLogOptions{}
	var errs []error
	boolParam := func(key string, out *bool) {
		if v, ok := q[key]; ok {
			errs = append(errs, runtime.Convert_Slice_string_To_bool(&v, out, nil))
		}
	}
	intParam := func(key string, out **int64) {
		if v, ok := q[key]; ok {
			errs = append(errs, runtime.Convert_Slice_string_To_Pointer_int64(&v, out, nil))
		}
	}
	if v := q["container"]; len(v) > 0 {
		opts.Container = v[0]
	}
	boolParam("follow", &opts.Follow)
	boolParam("previous", &opts.Previous)
	boolParam("timestamps", &opts.Timestamps)
	boolParam("insecureSkipTLSVerifyBackend", &opts.InsecureSkipTLSVerifyBackend)
	intParam("sinceSeconds", &opts.SinceSeconds)
	intParam("tailLines", &opts.TailLines)
	intParam("limitBytes", &opts.LimitBytes)
	if v, ok := q["sinceTime"]; ok {
		errs = append(errs, metav1.Convert_Slice_string_To_Pointer_v1_Time(&v, &opts.SinceTime, nil))
	}
	if v, ok := q["stream"]; ok && len(v) > 0 {
		s := v[0]
		opts.Stream = &s
	}
	if err := errors.Join(errs...); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if errs := validateLogOptions(opts); len(errs) > 0 {
		return nil, apierrors.NewInvalid(schema.GroupKind{Kind: "PodLogOptions"}, name, errs)
	}
	return opts, nil
}

// validateLogOptions is upstream's ValidatePodLogOptions with the
// PodLogsQuerySplitStreams gate off (its default in v1.34).
func validateLogOptions(opts *corev1.PodLogOptions) field.ErrorList {
	var errs field.ErrorList
	if opts.TailLines != nil && *opts.TailLines < 0 {
		errs = append(errs, field.Invalid(field.NewPath("tailLines"), *opts.TailLines, "must be greater than or equal to 0"))
	}
	if opts.LimitBytes != nil && *opts.LimitBytes < 1 {
		errs = append(errs, field.Invalid(field.NewPath("limitBytes"), *opts.LimitBytes, "must be greater than 0"))
	}
	switch {
	case opts.SinceSeconds != nil && opts.SinceTime != nil:
		errs = append(errs, field.Forbidden(field.NewPath(""), "at most one of `sinceTime` or `sinceSeconds` may be specified"))
	case opts.SinceSeconds != nil:
		if *opts.SinceSeconds < 1 {
			errs = append(errs, field.Invalid(field.NewPath("sinceSeconds"), *opts.SinceSeconds, "must be greater than 0"))
		}
	}
	if opts.Stream != nil {
		errs = append(errs, field.Forbidden(field.NewPath("stream"), "may not be specified"))
	}
	return errs
}

// logLocation is upstream's LogLocation: nil (an empty log) for a pod not
// yet scheduled.
func (p *Proxy) logLocation(r *http.Request, pod *corev1.Pod, opts *corev1.PodLogOptions) (*url.URL, http.RoundTripper, error) {
	container, err := validateContainer(opts.Container, pod)
	if err != nil {
		return nil, nil, err
	}
	if pod.Spec.NodeName == "" {
		return nil, nil, nil
	}
	conn, err := p.nodeConnection(r.Context(), pod.Spec.NodeName)
	if err != nil {
		return nil, nil, err
	}
	params := url.Values{}
	if opts.Follow {
		params.Add("follow", "true")
	}
	if opts.Previous {
		params.Add("previous", "true")
	}
	if opts.Timestamps {
		params.Add("timestamps", "true")
	}
	if opts.SinceSeconds != nil {
		params.Add("sinceSeconds", strconv.FormatInt(*opts.SinceSeconds, 10))
	}
	if opts.SinceTime != nil {
		params.Add("sinceTime", opts.SinceTime.Format(time.RFC3339))
	}
	if opts.TailLines != nil {
		params.Add("tailLines", strconv.FormatInt(*opts.TailLines, 10))
	}
	if opts.LimitBytes != nil {
		params.Add("limitBytes", strconv.FormatInt(*opts.LimitBytes, 10))
	}
	loc := &url.URL{
		Scheme:   conn.Scheme,
		Host:     net.JoinHostPort(conn.Host, conn.Port),
		Path:     fmt.Sprintf("/containerLogs/%s/%s/%s", pod.Namespace, pod.Name, container),
		RawQuery: params.Encode(),
	}
	rt := conn.Transport
	if opts.InsecureSkipTLSVerifyBackend {
		rt = conn.InsecureTransport
	}
	if !opts.Follow {
		// A finished log answers at once; a following one sends its
		// headers with its first line, which may be long in coming.
		rt = kubeletclient.HeaderTimeout(rt, p.cfg.Kubelets.Timeout())
	}
	return loc, rt, nil
}

// PodLog serves GET pods/log: the container's log, streamed from the
// kubelet as it comes (flushed per write when following).
func (p *Proxy) PodLog(w http.ResponseWriter, r *http.Request, namespace, name string) {
	if r.Method != http.MethodGet {
		p.cfg.WriteError(w, r, methodNotAllowed(podsGR, r))
		return
	}
	opts, err := ParseLogOptions(name, r.URL.Query())
	if err != nil {
		p.cfg.WriteError(w, r, err)
		return
	}
	pod, err := p.cfg.Objects.Pod(r.Context(), namespace, name)
	if err != nil {
		p.cfg.WriteError(w, r, err)
		return
	}
	loc, rt, err := p.logLocation(r, pod, opts)
	if err != nil {
		p.cfg.WriteError(w, r, err)
		return
	}
	start := time.Now()
	streamer := &genericrest.LocationStreamer{
		Location:        loc,
		Transport:       rt,
		ContentType:     "text/plain",
		Flush:           opts.Follow,
		ResponseChecker: genericrest.NewGenericHttpResponseChecker(schema.GroupResource{Resource: "pods/log"}, name),
		RedirectChecker: genericrest.PreventRedirects,
	}
	in, flush, contentType, err := streamer.InputStream(r.Context(), "v1", r.Header.Get("Accept"))
	if loc != nil {
		p.metrics.observe("pods", "log", statusCode(err), start)
	}
	if err != nil {
		p.cfg.WriteError(w, r, backendError(err))
		return
	}
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(http.StatusOK)
	if in == nil {
		return
	}
	defer in.Close()
	copyStream(w, in, flush)
}

// copyStream copies in to w through one pooled-size buffer, flushing
// after every read when flush is set, so a followed log reaches the
// client line by line and nothing accumulates in the server.
func copyStream(w http.ResponseWriter, in io.Reader, flush bool) {
	if !flush {
		_, _ = io.Copy(w, in)
		return
	}
	rc := http.NewResponseController(w)
	buf := make([]byte, 32<<10)
	for {
		n, err := in.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			_ = rc.Flush()
		}
		if err != nil {
			return
		}
	}
}

func statusCode(err error) int {
	if err == nil {
		return http.StatusOK
	}
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		return int(st.Status().Code)
	}
	return 0
}
