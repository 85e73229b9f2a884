// Package policies embeds mcpgate's Rego policy bundles, one folder per
// surface, and names the revision of a bundle.
package policies

import (
	"crypto/sha256"
	"embed"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
)

// FS holds one bundle folder per surface. Under "supacloud/": the policy
// modules (package supacloud, grants.rego holding the grant catalog as
// data.supacloud.grants and data.supacloud.permissions) and their
// *_test.rego files (package supacloud_test); the query for one tools/call
// is data.supacloud.decision and for tools/list data.supacloud.visible_tools
// (contract in supacloud/README.md). Under "ccserver/": the cc_server
// surface (docs/requirements.md#cc-registry; package ccserver, modes.rego holding the mode policy as
// data), queried at data.ccserver.decision and data.ccserver.visible_tools
// (contract in ccserver/README.md). Under "system/log" it holds the
// decision log mask (package system.log, data.system.log.mask), which the
// gateway evaluates on every decision log event. Skip files ending in
// _test.rego when serving; they only matter to `opa test`.
//
//go:embed supacloud ccserver system
var FS embed.FS

// Revision names the revision of the bundle in fsys: the "revision" of its
// OPA bundle manifest (.manifest at the root) when it has one, else
// "sha256:" and the SHA-256 over the files a gateway loads from it (every
// .rego, .json, .yaml and .yml file except *_test.rego), taken in path
// order, each as its path and its content with their lengths. The hash
// changes with any policy or data edit and with nothing else: not with
// tests, docs, file times or the order files were written in.
func Revision(fsys fs.FS) (string, error) {
	if raw, err := fs.ReadFile(fsys, ".manifest"); err == nil {
		var m struct {
			Revision string `json:"revision"`
		}
		if err := json.Unmarshal(raw, &m); err != nil {
			return "", fmt.Errorf("policy bundle .manifest is not JSON: %w", err)
		}
		if m.Revision != "" {
			return m.Revision, nil
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("policy bundle .manifest: %w", err)
	}
	var files []string
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() && loaded(p) {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("policy bundle: %w", err)
	}
	slices.Sort(files)
	h := sha256.New()
	for _, p := range files {
		content, err := fs.ReadFile(fsys, p)
		if err != nil {
			return "", fmt.Errorf("policy bundle: %w", err)
		}
		for _, b := range [][]byte{[]byte(p), content} {
			_ = binary.Write(h, binary.BigEndian, uint64(len(b)))
			h.Write(b)
		}
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// loaded reports whether a gateway loads the file at p: policy modules and
// data documents, but not tests.
func loaded(p string) bool {
	if strings.HasSuffix(p, "_test.rego") {
		return false
	}
	switch path.Ext(p) {
	case ".rego", ".json", ".yaml", ".yml":
		return true
	}
	return false
}

// EmbeddedRevision is Revision of FS, the bundle built into the binary.
func EmbeddedRevision() string {
	rev, err := Revision(FS)
	if err != nil { // cannot happen: FS is read at build time
		panic(err)
	}
	return rev
}
