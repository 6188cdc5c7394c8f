package framework

// Code says whether a filter passed and, if not, whether preemption could
// help.
type Code int

const (
	// Success: the node fits.
	Success Code = iota
	// Unschedulable: the node does not fit now; removing pods might help.
	Unschedulable
	// UnschedulableAndUnresolvable: removing pods cannot help (selector,
	// taint, node name), so preemption skips the node.
	UnschedulableAndUnresolvable
	// Error: a plugin failed.
	Error
)

// Status is a filter's verdict; nil means Success.
type Status struct {
	Code    Code
	Reasons []string
}

// NewStatus returns a failure status.
func NewStatus(code Code, reasons ...string) *Status {
	return &Status{Code: code, Reasons: reasons}
}

// IsSuccess reports whether s is nil or Success.
func (s *Status) IsSuccess() bool { return s == nil || s.Code == Success }

// Upstream's filter reasons, verbatim, so messages match kube-scheduler's.
const (
	ReasonNodeName             = "node(s) didn't match the requested node name"
	ReasonNodeUnschedulable    = "node(s) were unschedulable"
	ReasonNodeAffinity         = "node(s) didn't match Pod's node affinity/selector"
	ReasonNodePorts            = "node(s) didn't have free ports for the requested pod ports"
	ReasonTooManyPods          = "Too many pods"
	ReasonAffinityRules        = "node(s) didn't match pod affinity rules"
	ReasonAntiAffinityRules    = "node(s) didn't match pod anti-affinity rules"
	ReasonExistingAntiAffinity = "node(s) didn't satisfy existing pods anti-affinity rules"
	ReasonSpread               = "node(s) didn't match pod topology spread constraints"
	ReasonSpreadMissingLabel   = "node(s) didn't match pod topology spread constraints (missing required label)"
	ReasonNodeNotReady         = "node(s) had no node object"
)
