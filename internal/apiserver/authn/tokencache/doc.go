// Package tokencache remembers successful token authentications for a
// short while, as upstream's token cache in front of its token
// authenticators (--authentication-token-cache-ttl… there called
// TokenSuccessCacheTTL, 10 s). A ServiceAccount token costs an RS256
// verification and two cache lookups (about 100 µs of CPU); a client
// sending the same token on every request pays that once per TTL.
//
// The price is upstream's: a token whose ServiceAccount or bound pod was
// deleted keeps working until its entry expires (at most the TTL).
// Failures are never cached, so a token accepted a moment after it was
// refused (a pod the cache had not yet seen) is not held back.
package tokencache
