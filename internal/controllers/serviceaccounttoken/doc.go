// Package serviceaccounttoken is upstream's token controller
// (pkg/controller/serviceaccount/tokens_controller.go): it fills the
// kubernetes.io/service-account-token Secrets users create, annotated
// kubernetes.io/service-account.name, with a legacy (never-expiring) token
// for that ServiceAccount, the cluster CA (ca.crt) and the namespace, and
// records the account's uid in kubernetes.io/service-account.uid; it
// deletes such Secrets when their ServiceAccount is deleted or was
// recreated with another uid. The API server accepts a legacy token while
// its Secret exists and holds it.
//
// The controller signs with the API server's ServiceAccount key, read
// from a file: `myriad up` passes its data directory's sa.key (or the
// --service-account-signing-key-file it was given); `myriad controllers`
// against a remote server takes it with --service-account-private-key-file,
// as kube-controller-manager does. Without a key the controller does not
// run.
package serviceaccounttoken
