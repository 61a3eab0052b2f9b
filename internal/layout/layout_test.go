package layout

import (
	"errors"
	"testing"

	"github.com/redisync/redisync/internal/core/errs"
)

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		hash map[string]string
		rw   bool
		ok   bool
	}{
		{nil, false, true},
		{nil, true, true},
		{map[string]string{"c1:7": "1"}, false, true},
		{map[string]string{"8b2c-uuid:123": "3"}, false, true},
		{map[string]string{"name": "bob"}, false, false},
		{map[string]string{"c1:7": "0"}, false, true},                    // kept by a minimum hold
		{map[string]string{"c1:x": "1"}, false, true},                    // another client's token (node-redisson: a uuid)
		{map[string]string{"f1f90fe0-aa:faeeaa60-bb": "1"}, false, true}, // node-redisson's owner
		{map[string]string{"c1:7": "-1"}, false, false},                  // no hold count
		{map[string]string{"c1:7": "x"}, false, false},                   // no hold count
		{map[string]string{":7": "1"}, false, false},
		{map[string]string{"c1:": "1"}, false, false},
		{map[string]string{"mode": "read", "c1:7": "1"}, false, false},
		{map[string]string{"mode": "read", "c1:7": "1"}, true, true},
		{map[string]string{"mode": "write", "c1:7:write": "1", "c1:7": "2"}, true, true},
		{map[string]string{"c1:7:write": "1"}, false, true}, // an owner's shape: "<id>:<token>" with any token
		{map[string]string{"c1:7": "1"}, true, false},       // no mode: a lock, not a read-write lock
		{map[string]string{"mode": "other", "c1:7": "1"}, true, false},
		{map[string]string{"rate": "10", "interval": "1000", "type": "0"}, false, false},
	} {
		err := Check("k", tc.hash, tc.rw)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, errs.ErrWrongType)) {
			t.Errorf("Check(%v, rw %v) = %v; want ok %v", tc.hash, tc.rw, err, tc.ok)
		}
	}
}
