package encryption

import (
	"strings"
	"testing"
)

// FuzzLoad: no configuration crashes the loader, and one it accepts
// builds transformers that round-trip.
func FuzzLoad(f *testing.F) {
	head := "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\n"
	f.Add(head + "resources:\n- resources: [secrets]\n  providers:\n  - aescbc:\n      keys: [{name: k, secret: " + key32 + "}]\n")
	f.Add(head + "resources:\n- resources: ['*.*']\n  providers:\n  - secretbox:\n      keys: [{name: k, secret: " + key32 + "}]\n  - identity: {}\n")
	f.Add(head + "resources:\n- resources: ['*.apps', secrets]\n  providers:\n  - aesgcm:\n      keys: [{name: k, secret: " + key16 + "}]\n")
	f.Add(head + "resources:\n- resources: [x]\n  providers:\n  - kms: {name: a}\n")
	f.Add("{}")
	f.Fuzz(func(t *testing.T, data string) {
		c, err := Load([]byte(data))
		if err != nil {
			return
		}
		for gr := range c.byResource {
			st, ok := c.Wrap(gr, nil).(*Store)
			if !ok {
				continue
			}
			enc, err := st.encrypt(t.Context(), "/k", []byte("v"))
			if err != nil {
				t.Fatalf("encrypt: %v", err)
			}
			out, err := st.decrypt(t.Context(), "/k", 1, enc)
			if err != nil || string(out) != "v" {
				t.Fatalf("round trip: %q %v", out, err)
			}
		}
	})
}

// FuzzDescribeUndecryptable: any stored bytes give a bounded, printable
// description or none.
func FuzzDescribeUndecryptable(f *testing.F) {
	f.Add([]byte("k8s:enc:aescbc:v1:key1:\x00\x01binary"))
	f.Add([]byte("k8s:enc:"))
	f.Add([]byte("k8s\x00protobuf"))
	f.Add([]byte("k8s:enc:" + strings.Repeat(":", 100)))
	f.Fuzz(func(t *testing.T, v []byte) {
		d := DescribeUndecryptable(v)
		if len(d) > 300 {
			t.Fatalf("description of %d bytes", len(d))
		}
		for _, c := range d {
			if c < 0x20 || c > 0x7e {
				t.Fatalf("unprintable %q in %q", c, d)
			}
		}
	})
}
