package pubsub

import (
	"errors"
	"strings"
	"testing"

	"github.com/redisync/redisync/internal/core/errs"
)

// flagsErr accepts K with g and x, or K with A, in any order and with
// other flags; otherwise it names the value to set: the current flags and
// the missing ones.
func TestFlagsErr(t *testing.T) {
	for flags, want := range map[string]string{
		"Kgx": "", "xgK": "", "KA": "", "AKE": "", "Kgxe": "", "KEg$lshzxetd": "",
		"": "Kgx", "Egx": "EgxK", "Kg": "Kgx", "Kx": "Kxg", "A": "AK", "EA": "EAK", "gx": "gxK",
	} {
		err := flagsErr(flags, "node")
		switch {
		case want == "" && err != nil:
			t.Errorf("%q: %v", flags, err)
		case want != "" && (!errors.Is(err, errs.ErrKeyspaceEventsOff) ||
			!strings.Contains(err.Error(), "CONFIG SET notify-keyspace-events "+want+" ")):
			t.Errorf("%q: %v, want it to name %q", flags, err, want)
		}
	}
}
