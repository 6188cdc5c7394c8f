package request

// isLongRunningSubresource: these stream for as long as the client wants;
// they must not hold an in-flight slot or be given the request deadline.
func isLongRunningSubresource(s string) bool {
	switch s {
	case "attach", "exec", "proxy", "log", "portforward":
		return true
	}
	return false
}

// IsLongRunning reports whether the request may legitimately stay open
// indefinitely (watches, proxy, exec, attach, log, port-forward), as
// upstream's BasicLongRunningRequestCheck. Such requests are not counted by
// max-in-flight and get no request timeout; they are bounded by their own
// means (watch timeoutSeconds, client disconnect).
func (ri *RequestInfo) IsLongRunning() bool {
	if ri == nil || !ri.IsResourceRequest {
		return false
	}
	return ri.Verb == VerbWatch || ri.Verb == VerbProxy || isLongRunningSubresource(ri.Subresource)
}

// IsReadOnly reports whether the request cannot change state: get, list and
// watch, or a GET/HEAD on a non-resource path. Everything else is mutating
// for flow-control purposes.
func (ri *RequestInfo) IsReadOnly() bool {
	switch ri.Verb {
	case VerbGet, VerbList, VerbWatch, "head":
		return true
	}
	return false
}
