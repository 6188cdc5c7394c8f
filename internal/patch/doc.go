// Package patch implements what the API server needs for PATCH requests and
// for managedFields:
//
//   - Apply applies a JSON patch (RFC 6902), a JSON merge patch (RFC 7386) or
//     a strategic merge patch to an object and decodes the result into the
//     object's Go type, with upstream's error codes and messages (400 for a
//     malformed patch, 422 for one that cannot be applied or that produces an
//     invalid object) and field-validation handling (Ignore, Warn, Strict).
//   - FieldManagers tracks managedFields on create, update and patch, and
//     implements server-side apply (application/apply-patch+yaml), one
//     upstream managedfields.FieldManager per kind and subresource, with
//     upstream's results by shorter ways where they are certain: a
//     heartbeat's known change (UpdateKnown), a create equal to a recent
//     one (Create).
//
// Neither holds global state. Apply is a pure function; FieldManagers is safe
// for concurrent use.
//
// What stays with the API server: choosing the patch type from the request's
// Content-Type, rejecting a patch that renames the object (the URL's name and
// namespace are the API server's), running admission and validation on the
// result, and the field manager name: fieldManager from the query, which is
// required for apply, and for other writes defaults, as upstream, to the
// User-Agent's prefix up to the first "/" (kubectl/v1.x → "kubectl").
package patch
