package bootstraptoken

// ParseToken splits a bootstrap token "<id>.<secret>" — six and sixteen
// characters of [a-z0-9] — as k8s.io/cluster-bootstrap's
// util/tokens.ParseToken does with a regular expression, but without one
// and without allocating: every bearer token no earlier authenticator
// accepted comes through here.
func ParseToken(s string) (id, secret string, ok bool) {
	const idLen, secretLen = 6, 16
	if len(s) != idLen+1+secretLen || s[idLen] != '.' {
		return "", "", false
	}
	for i := 0; i < len(s); i++ {
		if i == idLen {
			continue
		}
		if c := s[i]; (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return "", "", false
		}
	}
	return s[:idLen], s[idLen+1:], true
}
