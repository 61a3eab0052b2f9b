package request

import (
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/redisync/redisync/lua"
)

// TestLedgerTTL checks that a counted semaphore's ledger lives as long as
// a client may still ask about a request it recorded, and no longer:
// the question starts at most a request lifetime (MaxTTL) after the
// request was sent, goes on for at most completeMax, and its last copy
// lives at most MaxTTL more, to a second past its deadline
// (lua/prelude_ledger.lua).
func TestLedgerTTL(t *testing.T) {
	src, ok := lua.Source("prelude_ledger.lua")
	if !ok {
		t.Fatal("no prelude_ledger.lua")
	}
	m := regexp.MustCompile(`local ledger_ttl = '(\d+)'`).FindStringSubmatch(src)
	if m == nil {
		t.Fatal("prelude_ledger.lua sets no ledger_ttl")
	}
	ms, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	want := completeMax + 2*MaxTTL + time.Second
	if got := time.Duration(ms) * time.Millisecond; got != want {
		t.Errorf("ledger_ttl = %v, want completeMax + 2 × MaxTTL + 1 s = %v", got, want)
	}
}
