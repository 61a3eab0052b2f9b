package bindgen

import (
	"crypto/sha1"
	"encoding/hex"
	"strings"
	"testing"
	"testing/fstest"
)

// gen runs Generate on a package with one script, loaded as Demo, whose
// header is header.
func gen(header string) (string, error) {
	out, err := Generate(fstest.MapFS{
		"demo.go":  {Data: []byte("package lua\n\nvar Demo = load(\"demo.lua\")\n")},
		"demo.lua": {Data: []byte(header + "return 1\n")},
	})
	return string(out), err
}

func TestGenerate(t *testing.T) {
	out, err := gen(`-- demo: a demo.
--
-- KEYS[1]  lock: the lock
-- KEYS[2]  channel?: its channel
-- ARGV[1]  leaseMillis int64: the lease,
--          in milliseconds
-- ARGV[2]  undo bool: undo mode
-- ARGV[3..] ids string: the ids
--
-- Returns what it does.
-- Reply    {code, [value]}
-- Code     Done = 1: done
`)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"type DemoArgs struct",
		"// LeaseMillis is ARGV[1]: the lease, in milliseconds.",
		"Ids []string",
		"if a.Channel == \"\" {",
		"args = append(args, flag(a.Undo))",
		"DemoDone = 1",
		"type DemoReply struct",
		"if len(res) < 1 {",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// The generator records the SHA-1 digest of each script composed with its
// preludes (constants naming prelude files), the one EVALSHA names it by.
func TestGenerateDigests(t *testing.T) {
	out, err := Generate(fstest.MapFS{
		"demo.go":          {Data: []byte("package lua\n\nconst helpers = \"prelude_demo.lua\"\n\nvar Demo = load(\"demo.lua\", helpers)\n")},
		"demo.lua":         {Data: []byte("-- demo: a demo.\n-- Reply    n\nreturn f()\n")},
		"prelude_demo.lua": {Data: []byte("-- prelude_demo: helpers.\n\nlocal function f()\n  return 1\nend\n\nlocal function g()\n  return 2\nend\n")},
	})
	if err != nil {
		t.Fatal(err)
	}
	// the prelude's f (g is unused), then the script
	want := `"demo.lua": {sha1: "` + sha1Hex("local function f()\n  return 1\nend\n-- demo: a demo.\n-- Reply    n\nreturn f()\n") + `"`
	if !strings.Contains(string(out), want) {
		t.Errorf("output lacks %q:\n%s", want, out)
	}
	_, err = Generate(fstest.MapFS{
		"demo.go":  {Data: []byte("package lua\n\nvar Demo = load(\"demo.lua\", helpers)\n")},
		"demo.lua": {Data: []byte("-- demo: a demo.\n-- Reply    n\nreturn 1\n")},
	})
	if err == nil {
		t.Error("a prelude that is no constant: generated, want an error")
	}
}

func sha1Hex(s string) string {
	sum := sha1.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

func TestGenerateRefuses(t *testing.T) {
	for name, header := range map[string]string{
		"unnamed entry":       "-- KEYS[1]  the lock\n-- Reply    n\n",
		"untyped argument":    "-- KEYS[1]  lock: the lock\n-- ARGV[1]  lease: the lease\n-- Reply    n\n",
		"typed key":           "-- KEYS[1]  lock string: the lock\n-- Reply    n\n",
		"out of order":        "-- KEYS[2]  lock: the lock\n-- Reply    n\n",
		"after variadic":      "-- KEYS[1..] locks: the locks\n-- KEYS[2]  more: more\n-- Reply    n\n",
		"no reply":            "-- KEYS[1]  lock: the lock\n",
		"malformed reply":     "-- KEYS[1]  lock: the lock\n-- Reply    {code, [value}\n",
		"malformed code":      "-- KEYS[1]  lock: the lock\n-- Reply    n\n-- Code     done 1\n",
		"method name":         "-- KEYS[1]  keys: the keys\n-- Reply    n\n",
		"optional non-string": "-- KEYS[1]  lock: the lock\n-- ARGV[1]  n? int64: n\n-- Reply    n\n",
	} {
		if _, err := gen(header); err == nil {
			t.Errorf("%s: generated, want an error", name)
		}
	}
}
