package main

import (
	"fmt"
	"io"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/mcpgate/mcpgate/policies"
)

// version and commit are set by `make build`:
//
//	-ldflags "-X main.version=$(git describe --tags --always --dirty) -X main.commit=$(git rev-parse HEAD)"
//
// Left empty (go build, go install, go test), they come from the build
// information the go command records (the module version, vcs.revision).
var (
	version string
	commit  string
)

// buildInfo is what `mcpgate --version` reports.
type buildInfo struct {
	Version, Commit, PolicyRevision string
}

// String is the --version text: one "name value" line each.
func (b buildInfo) String() string {
	return fmt.Sprintf("mcpgate %s\ncommit %s\npolicy bundle revision %s (embedded)\n", b.Version, b.Commit, b.PolicyRevision)
}

// versionInfo resolves version and commit: the -ldflags values, else the
// binary's build information, else "dev" and "unknown".
func versionInfo() buildInfo {
	b := buildInfo{Version: version, Commit: commit, PolicyRevision: policies.EmbeddedRevision()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if b.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			b.Version = bi.Main.Version
		}
		if b.Commit == "" {
			var rev, modified string
			for _, s := range bi.Settings {
				switch s.Key {
				case "vcs.revision":
					rev = s.Value
				case "vcs.modified":
					modified = s.Value
				}
			}
			if rev != "" && modified == "true" {
				rev += "-dirty"
			}
			b.Commit = rev
		}
	}
	if b.Version == "" {
		b.Version = "dev"
	}
	if b.Commit == "" {
		b.Commit = "unknown"
	}
	return b
}

func newVersionCmd(out io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "print the version, the commit and the embedded policy bundle's revision (same as --version)",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprint(out, versionInfo())
			return err
		},
	}
}
