package scheduler

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/rest"
)

// Config configures Run. Zero values mean the defaults stated per field.
type Config struct {
	// RESTConfig reaches the API server. Required. QPS and Burst, if unset,
	// default to 5000 and 10000: binding is one request per pod; an unset
	// ContentType to protobuf.
	RESTConfig *rest.Config
	// SchedulerName is the spec.schedulerName this scheduler serves.
	// Default "default-scheduler".
	SchedulerName string
	// LeaderElect runs leader election on the Lease kube-system/kube-scheduler
	// (upstream's), so Myriad's and upstream's schedulers exclude each other.
	LeaderElect bool
	// LeaseDuration, RenewDeadline and RetryPeriod default to upstream's
	// 15s, 10s and 2s.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// Identity in the Lease. Default hostname_uuid.
	Identity string
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Metrics receives the scheduler's metrics; nil registers nothing.
	Metrics prometheus.Registerer

	// DisableEquivalenceClasses schedules every pod on its own (default:
	// identical pods share a search and are placed as a batch).
	DisableEquivalenceClasses bool
	// PercentageOfNodesToScore: 0 is upstream's adaptive percentage; 100
	// checks every node.
	PercentageOfNodesToScore int
	// Parallelism is the number of filtering goroutines. Default GOMAXPROCS.
	Parallelism int
	// BatchSize bounds an equivalence-class batch. Default 256.
	BatchSize int
	// DisablePreemption turns preemption off.
	DisablePreemption bool
	// MaxConcurrentBinds bounds pods/binding calls in flight (default 64),
	// below the API server's mutating-inflight limit.
	MaxConcurrentBinds int
	// Informers, when set, is a factory the scheduler shares with other
	// components of its process (`myriad up`): it registers its handlers
	// there and starts it, but neither owns nor shuts it down, and the
	// objects in it are read-only and may lack managedFields. Nil: the
	// scheduler builds its own factory on its client, which drops
	// managedFields from pods as upstream's does.
	Informers informers.SharedInformerFactory
	// VolumeBindTimeout bounds how long a pod's binding waits for its
	// claims to be bound after the scheduler pre-bound their volumes or
	// selected the node for provisioning. Default upstream's 600 s
	// (bindTimeoutSeconds).
	VolumeBindTimeout time.Duration
}

func (c *Config) setDefaults() error {
	if c.RESTConfig == nil {
		return errors.New("scheduler: Config.RESTConfig is required")
	}
	if c.SchedulerName == "" {
		c.SchedulerName = "default-scheduler"
	}
	if c.LeaseDuration == 0 {
		c.LeaseDuration = 15 * time.Second
	}
	if c.RenewDeadline == 0 {
		c.RenewDeadline = 10 * time.Second
	}
	if c.RetryPeriod == 0 {
		c.RetryPeriod = 2 * time.Second
	}
	if c.Identity == "" {
		host, err := os.Hostname()
		if err != nil {
			return fmt.Errorf("scheduler identity: %w", err)
		}
		c.Identity = host + "_" + string(uuid.NewUUID())
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.VolumeBindTimeout == 0 {
		c.VolumeBindTimeout = 600 * time.Second
	}
	rc := rest.CopyConfig(c.RESTConfig)
	if rc.QPS == 0 {
		rc.QPS = 5000
	}
	if rc.Burst == 0 {
		rc.Burst = 10000
	}
	if rc.UserAgent == "" {
		rc.UserAgent = "myriad-scheduler"
	}
	if rc.ContentType == "" {
		// Upstream's scheduler speaks protobuf too: a pod decodes several
		// times faster than from JSON, and the informers decode every one.
		rc.ContentType = runtime.ContentTypeProtobuf
		rc.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	}
	c.RESTConfig = rc
	return nil
}
