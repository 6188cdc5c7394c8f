// Package encryption keeps the values of chosen resources encrypted at
// rest, as upstream's --encryption-provider-config does: an
// EncryptionConfiguration (apiserver.config.k8s.io/v1) names resources
// (secrets, configmaps, "*.apps", "*.*") and, for each, an ordered list of
// providers (aescbc, aesgcm, secretbox, identity). The first provider
// encrypts every write; all of them are tried on reads, so adding a new
// key first and rewriting every object (`kubectl get secrets -A -o json |
// kubectl replace -f -`) rotates keys, and putting identity first
// decrypts the store object by object.
//
// The ciphers are upstream's transformers (k8s.io/apiserver's
// pkg/storage/value and its encrypt/aes, encrypt/secretbox and
// encrypt/identity), composed the way upstream's encryptionconfig package
// composes them, so stored values carry upstream's prefixes
// (k8s:enc:aescbc:v1:<key name>:...) and its formats. The authenticated
// data of aesgcm is the value's storage key, as upstream's, so a value
// cannot be moved to another key and still decrypt. KMS providers are
// refused: KMS v2 needs a gRPC plugin and upstream's envelope machinery
// (k8s.io/apiserver's server/options/encryptionconfig, which pulls in the
// whole generic API server), which Myriad does not carry.
//
// Encryption sits between a resource's objects and the store: Config.Wrap
// gives a resource a storage.Store that encrypts what it writes and
// decrypts what it reads (gets, lists, watch events, conflicts), so
// everything above it — the object codec, the watch cache, its indexes,
// the stored bytes it serves — sees plaintext as before, and resources the
// configuration does not name keep the store itself, at no cost.
package encryption
