package lua

// Preludes returns the file names of the preludes scripts are composed
// with.
func Preludes() []string { return append([]string(nil), preludes...) }

// Composed returns the source the named script runs: the definitions of
// its preludes that it uses, then its own text (see compose).
func Composed(name string) (string, bool) {
	b, ok := boxedScripts[registry[name]]
	if !ok {
		return "", false
	}
	return b.src.(string), true
}
