// Command bindgen writes package lua's typed script bindings
// (bindings_gen.go) from the .lua headers of the current directory. It is
// run by `go generate ./lua`.
package main

import (
	"fmt"
	"os"

	"github.com/redisync/redisync/lua/internal/bindgen"
)

func main() {
	out, err := bindgen.Generate(os.DirFS("."))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := os.WriteFile(bindgen.OutputName, out, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
