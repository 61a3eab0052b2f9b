package main

import (
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

const versionHead = `usage: redisync version

Version prints the version of the redisync module the command was built
from, the source revision when the build recorded one, and the Go version
and platform it was built with. "(devel)" means a build from a source
tree whose version Go could not tell.
`

// modulePath is the module's path, printed when the build recorded none.
const modulePath = "github.com/redisync/redisync"

func versionFlags() *flag.FlagSet { return newFlagSet("version", versionHead) }

// runVersion prints the command's version, from the build information Go
// records in the binary (runtime/debug.ReadBuildInfo).
func runVersion(args []string, stdout io.Writer) error {
	pos, err := parseFlags(versionFlags(), args, stdout)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("version takes no arguments, got %d", len(pos))
	}
	writeVersion(stdout, readVersion())
	return nil
}

// buildVersion is what version prints.
type buildVersion struct {
	module, version string
	revision, time  string // VCS revision and its commit time; "" when not recorded
	modified        bool   // built from a source tree with uncommitted changes
	goVersion       string
}

// readVersion reads the build information of the running binary.
func readVersion() buildVersion {
	v := buildVersion{module: modulePath, version: "(devel)", goVersion: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if bi.Main.Path != "" {
		v.module = bi.Main.Path
	}
	if bi.Main.Version != "" {
		v.version = bi.Main.Version
	}
	if bi.GoVersion != "" {
		v.goVersion = bi.GoVersion
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.revision = s.Value
		case "vcs.time":
			v.time = s.Value
		case "vcs.modified":
			v.modified = s.Value == "true"
		}
	}
	return v
}

// writeVersion prints v, one fact a line.
func writeVersion(w io.Writer, v buildVersion) {
	fmt.Fprintf(w, "redisync %s\n", v.version)
	fmt.Fprintf(w, "module:   %s\n", v.module)
	if v.revision != "" {
		rev := v.revision
		if v.time != "" {
			rev += " (" + v.time + ")"
		}
		if v.modified {
			rev += ", with uncommitted changes"
		}
		fmt.Fprintf(w, "revision: %s\n", rev)
	}
	fmt.Fprintf(w, "go:       %s %s/%s\n", v.goVersion, runtime.GOOS, runtime.GOARCH)
}
