package sim

import (
	"crypto/rand"
	"encoding/csv"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
)

const nodeUserPrefix = "system:node:"

// ReadNodeTokens reads the node tokens of an API server's static token
// file (upstream's --token-auth-file CSV: token,user,uid[,"group1,group2"])
// and returns them by node name: every line whose user is
// system:node:<name>. Other lines are ignored, so one file can hold the
// cluster's other static tokens too.
func ReadNodeTokens(r io.Reader) (map[string]string, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.Comment = '#'
	tokens := map[string]string{}
	for line := 1; ; line++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return tokens, nil
		}
		if err != nil {
			return nil, fmt.Errorf("sim: node token file: %w", err)
		}
		if len(rec) < 3 {
			return nil, fmt.Errorf("sim: node token file line %d: want token,user,uid[,groups], got %d fields", line, len(rec))
		}
		token, user := strings.TrimSpace(rec[0]), strings.TrimSpace(rec[1])
		name, ok := strings.CutPrefix(user, nodeUserPrefix)
		if !ok {
			continue
		}
		if token == "" || name == "" {
			return nil, fmt.Errorf("sim: node token file line %d: empty token or node name", line)
		}
		if _, dup := tokens[name]; dup {
			return nil, fmt.Errorf("sim: node token file line %d: second token for node %s", line, name)
		}
		tokens[name] = token
	}
}

// WriteNodeTokens writes a fresh random token for each node name, as
// lines of upstream's static token file: the user system:node:<name> in
// group system:nodes, the identity the Node authorizer and NodeRestriction
// recognize. The API server reads the file with --token-auth-file and the
// simulator with ReadNodeTokens.
func WriteNodeTokens(w io.Writer, names []string) error {
	cw := csv.NewWriter(w)
	buf := make([]byte, 24)
	for _, name := range names {
		if _, err := rand.Read(buf); err != nil {
			return fmt.Errorf("sim: node token: %w", err)
		}
		if err := cw.Write([]string{hex.EncodeToString(buf), nodeUserPrefix + name, nodeUserPrefix + name, "system:nodes"}); err != nil {
			return fmt.Errorf("sim: writing node tokens: %w", err)
		}
	}
	cw.Flush()
	return cw.Error()
}

// NodeNames returns the names of the nodes cfg describes (NamePrefix and
// FirstIndex defaulted as the simulator does).
func NodeNames(cfg Config) []string {
	prefix := cfg.NamePrefix
	if prefix == "" {
		prefix = defaultPrefix
	}
	names := make([]string, cfg.Nodes)
	for i := range names {
		names[i] = fmt.Sprintf("%s%d", prefix, cfg.FirstIndex+i)
	}
	return names
}
