package cache

import (
	"errors"
	"fmt"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ErrNotFound is returned by Get when the key does not exist at the revision
// read. The cache does not know the object's GroupResource/name shape, so the
// API server turns it into apierrors.NewNotFound itself.
var ErrNotFound = errors.New("cache: object not found")

// IsNotFound reports whether err is (or wraps) ErrNotFound.
func IsNotFound(err error) bool { return errors.Is(err, ErrNotFound) }

// ErrStopped is returned by reads after Stop.
var ErrStopped = errors.New("cache: stopped")

// Every other error returned to callers is an *apierrors.StatusError the API
// server can write as is:
//
//	410 Expired          resourceVersion/continue older than the window, or
//	                     newer than the store has ever reached (another
//	                     store's: waitForClientRev)
//	504 Timeout          "Too large resource version" (cause ResourceVersionTooLarge,
//	                     Retry-After 1 s), when the cache does not reach the
//	                     revision asked for (or rv@t0) within Config.ReadWaitTimeout
//	429 TooManyRequests  cache not yet initialized (Retry-After 1 s)
//	400 BadRequest       unparsable resourceVersion, continue token, or options

func errTooOld(requested, oldest int64) error {
	// Upstream's watch cache wording; client-go matches on the reason
	// (Expired/Gone), humans on the text.
	return apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", requested, oldest))
}

func errTooLarge(requested, current int64) error {
	// Same shape as upstream storage.NewTooLargeResourceVersionError, which
	// client-go's reflector recognises (IsTooLargeResourceVersion) to fall
	// back to a list at resourceVersion "".
	err := apierrors.NewTimeoutError(fmt.Sprintf("Too large resource version: %d, current: %d", requested, current), 1)
	err.ErrStatus.Details.Causes = []metav1.StatusCause{{
		Type:    metav1.CauseTypeResourceVersionTooLarge,
		Message: "Too large resource version",
	}}
	return err
}

// errFutureRevision is the 410 for a resourceVersion the store never
// issued (waitForClientRev): client-go's reflectors relist on it.
func errFutureRevision(requested, current int64) error {
	return apierrors.NewResourceExpired(fmt.Sprintf("resource version %d is newer than its store has ever reached (%d): "+
		"it was issued by another store (the resource was moved to another etcd, or its store restored from a backup); list again", requested, current))
}

func errNotReady() error {
	return apierrors.NewTooManyRequests("storage is (re)initializing", 1)
}

// errContinueExpired is upstream's 410 for a continue token whose revision
// was compacted away; it carries a token (next) that continues the list
// at the latest revision, for clients that accept an inconsistent list.
func errContinueExpired(next string) error {
	err := apierrors.NewResourceExpired("The provided continue parameter is too old to display a consistent list result. " +
		"You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. " +
		"Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.")
	err.ErrStatus.ListMeta.Continue = next
	return err
}

func errBadRequest(format string, args ...any) error {
	return apierrors.NewBadRequest(fmt.Sprintf(format, args...))
}

// parseRV parses a non-empty resourceVersion.
func parseRV(s string) (int64, error) {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 {
		return 0, errBadRequest("invalid resource version: %q", s)
	}
	return v, nil
}

func internalError(err error) error {
	return apierrors.NewInternalError(err)
}
