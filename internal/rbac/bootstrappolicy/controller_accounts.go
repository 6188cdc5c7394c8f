package bootstrappolicy

// ControllerServiceAccounts maps each of Myriad's controllers, by its
// --controllers name, to the ServiceAccount in kube-system it runs as with
// per-controller credentials (kube-controller-manager's
// --use-service-account-credentials), hence to the role
// system:controller:<account> it holds. The pairs are
// kube-controller-manager's: several controllers may share an account
// (the three certificate controllers run as certificate-controller).
func ControllerServiceAccounts() map[string]string {
	return map[string]string{
		"serviceaccount":           "service-account-controller",
		"root-ca-cert-publisher":   "root-ca-cert-publisher",
		"namespace":                "namespace-controller",
		"garbagecollector":         "generic-garbage-collector",
		"nodelifecycle":            "node-controller",
		"pod-garbage-collector":    "pod-garbage-collector",
		"endpointslice":            "endpointslice-controller",
		"endpoint":                 "endpoint-controller",
		"replicaset":               "replicaset-controller",
		"replicationcontroller":    "replication-controller",
		"deployment":               "deployment-controller",
		"daemonset":                "daemon-set-controller",
		"job":                      "job-controller",
		"cronjob":                  "cronjob-controller",
		"statefulset":              "statefulset-controller",
		"persistentvolume-binder":  "persistent-volume-binder",
		"pvc-protection":           "pvc-protection-controller",
		"pv-protection":            "pv-protection-controller",
		"resourcequota":            "resourcequota-controller",
		"csrapproving":             "certificate-controller",
		"csrsigning":               "certificate-controller",
		"csrcleaner":               "certificate-controller",
		"horizontalpodautoscaling": "horizontal-pod-autoscaler",
		"clusterrole-aggregation":  "clusterrole-aggregation-controller",
	}
}
