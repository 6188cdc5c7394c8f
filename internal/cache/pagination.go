package cache

import (
	"encoding/base64"
	"encoding/json"
	"path"
	"strings"
)

// continueToken is upstream's continue format (k8s.io/apiserver storage):
// base64url(JSON) of the revision the first page was served at and the key,
// relative to the resource prefix, the next page starts at (inclusive).
// Using the same format keeps tokens opaque and familiar to clients that
// peek at them, and lets a token survive an API server restart.
type continueToken struct {
	APIVersion      string `json:"v"`
	ResourceVersion int64  `json:"rv"`
	StartKey        string `json:"start"`
}

const continueAPIVersion = "meta.k8s.io/v1"

// latestContinueRV in a token means "continue at the latest revision".
// Upstream uses -1 rather than 0 so a token missing its revision stays an
// error.
const latestContinueRV = -1

// encodeContinue returns the token for a list continuing at key (the
// last returned key + "\x00") as of rev.
func encodeContinue(key, prefix string, rev int64) string {
	out, _ := json.Marshal(&continueToken{APIVersion: continueAPIVersion, ResourceVersion: rev, StartKey: strings.TrimPrefix(key, prefix)})
	return base64.RawURLEncoding.EncodeToString(out)
}

// decodeContinue returns the full start key and revision of a token, or a
// 400. Like upstream it refuses start keys that would escape the prefix.
func decodeContinue(token, prefix string) (string, int64, error) {
	data, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return "", 0, errBadRequest("continue key is not valid: %v", err)
	}
	var c continueToken
	if err := json.Unmarshal(data, &c); err != nil {
		return "", 0, errBadRequest("continue key is not valid: %v", err)
	}
	if c.APIVersion != continueAPIVersion {
		return "", 0, errBadRequest("continue key is not valid: server does not recognize this encoded key")
	}
	// -1 is the token of a 410 for a compacted continue: go on from the
	// start key at the latest revision (an inconsistent list), as upstream.
	if c.ResourceVersion <= 0 && c.ResourceVersion != latestContinueRV {
		return "", 0, errBadRequest("continue key is not valid: incorrect encoded start resourceVersion (version %s)", continueAPIVersion)
	}
	if c.StartKey == "" {
		return "", 0, errBadRequest("continue key is not valid: encoded start key empty")
	}
	key := c.StartKey
	if !strings.HasPrefix(key, "/") {
		key = "/" + key
	}
	if path.Clean(key) != key {
		return "", 0, errBadRequest("continue key is not valid: %s", c.StartKey)
	}
	return prefix + key[1:], c.ResourceVersion, nil
}
