package node

import (
	"strings"

	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

const (
	// NodesGroup is the group every kubelet identity is in.
	NodesGroup = "system:nodes"
	// nodeUserNamePrefix starts every kubelet's user name.
	nodeUserNamePrefix = "system:node:"
)

// Identity reports whether u is a node and which: as upstream's default
// NodeIdentifier, a user named "system:node:<name>" in group
// "system:nodes". A node whose name is empty ("system:node:") is a node
// that cannot be identified: isNode is true and name "".
func Identity(u *request.User) (name string, isNode bool) {
	if u == nil || !strings.HasPrefix(u.Name, nodeUserNamePrefix) {
		return "", false
	}
	if !u.InGroup(NodesGroup) {
		return "", false
	}
	return u.Name[len(nodeUserNamePrefix):], true
}
