package authn

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

// ErrTokenFile is wrapped by every error about a malformed token file.
var ErrTokenFile = errors.New("invalid token file")

// LoadTokenFile reads upstream's --token-auth-file and returns its tokens
// as StaticTokens.
func LoadTokenFile(path string) (*StaticTokens, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("token file: %w", err)
	}
	defer f.Close()
	tokens, err := ParseTokenFile(f)
	if err != nil {
		return nil, fmt.Errorf("token file %s: %w", path, err)
	}
	return NewStaticTokens(tokens), nil
}

// ParseTokenFile parses upstream's token file: CSV records
//
//	token,user,uid[,"group1,group2"]
//
// with the same rules as k8s.io/apiserver's tokenfile.NewCSV: fewer than
// three columns is an error, a record with an empty token is skipped, a
// later duplicate token replaces an earlier one, and the fourth column is
// split on commas. The parser is ours rather than upstream's because
// upstream keeps tokens in a map looked up by value (its timing says which
// prefix matched) and hands back user.Info; StaticTokens compares digests
// in constant time and holds request.User.
func ParseTokenFile(r io.Reader) (map[string]*request.User, error) {
	reader := csv.NewReader(r)
	reader.FieldsPerRecord = -1
	tokens := make(map[string]*request.User)
	for {
		record, err := reader.Read()
		if err == io.EOF {
			return tokens, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrTokenFile, err)
		}
		if len(record) < 3 {
			line, _ := reader.FieldPos(0)
			return nil, fmt.Errorf("%w: line %d must have at least 3 columns (token, user name, user uid), found %d", ErrTokenFile, line, len(record))
		}
		if record[0] == "" {
			continue
		}
		u := &request.User{Name: record[1], UID: record[2]}
		if len(record) >= 4 {
			u.Groups = strings.Split(record[3], ",")
		}
		tokens[record[0]] = u
	}
}
