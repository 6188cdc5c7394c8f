package embedded

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// The store's format, recorded in m/format (FORMAT.md). There is one:
// formats 0 to 2 never left the repository, so a store in any of them is
// refused rather than upgraded, as is one in a format newer than this
// version knows. A change to the layout gets a new number, and an upgrade
// only once a release has shipped the old one.
const (
	metaFormatKey = "m/format"
	formatVersion = 3
)

// FormatError is Open's error for a directory holding a store in a format
// this version does not read.
type FormatError struct {
	Dir string
	// Found is the format the store records (0: a store with data but no
	// format record, as format 0 wrote); Supported is the one this version
	// reads.
	Found, Supported int64
}

func (e *FormatError) Error() string {
	if e.Found > e.Supported {
		return fmt.Sprintf("embedded: the store in %s is in format %d, but this version reads only format %d: it was written by a newer Myriad; open it with that version, or start from an empty directory",
			e.Dir, e.Found, e.Supported)
	}
	return fmt.Sprintf("embedded: the store in %s is in format %d, but this version reads only format %d: the data predates Myriad's first release and is not upgraded; start from an empty directory",
		e.Dir, e.Found, e.Supported)
}

// checkFormat returns nil if the store in db, opened from dir, is in
// formatVersion. A new store (no records at all) is given it first, with
// an fsync, before anything else is written to it.
func checkFormat(db *pebble.DB, dir string) error {
	format, err := readMeta(db, metaFormatKey) // 0 if there is no record
	if err != nil {
		return err
	}
	if format == 0 {
		empty, err := isEmpty(db)
		if err != nil {
			return fmt.Errorf("embedded: reading the store in %s: %w", dir, err)
		}
		if !empty {
			return &FormatError{Dir: dir, Found: 0, Supported: formatVersion}
		}
		if err := recordFormat(db); err != nil {
			return fmt.Errorf("embedded: recording the format of the new store in %s: %w", dir, err)
		}
		return nil
	}
	if format != formatVersion {
		return &FormatError{Dir: dir, Found: format, Supported: formatVersion}
	}
	return nil
}

// isEmpty reports whether db holds no records.
func isEmpty(db *pebble.DB) (bool, error) {
	it, err := db.NewIter(nil)
	if err != nil {
		return false, err
	}
	empty := !it.First()
	if err := it.Close(); err != nil {
		return false, err
	}
	return empty, nil
}

// recordFormat writes m/format, fsync'd; a failed WAL write (a full disk)
// comes back as an error, as in the writer, rather than a panic.
func recordFormat(db *pebble.DB) (err error) {
	defer recoverFatal(&err)
	return db.Set([]byte(metaFormatKey), encodeMeta(metaFormatKey, formatVersion), pebble.Sync)
}
