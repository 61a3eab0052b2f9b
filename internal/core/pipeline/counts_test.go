package pipeline

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestParseReplicationCountsEachReplicaOnce: a replica that reconnected after
// a short cut, while the primary still lists its old link, is one
// replica (netcluster seed 3: counted as two, the client waited for a
// second replica that did not exist, and every write on that primary
// failed for minutes).
func TestParseReplicationCountsEachReplicaOnce(t *testing.T) {
	for _, tc := range []struct {
		name string
		info string
		n    int
		ok   bool
	}{
		{"one", "role:master\r\nconnected_slaves:1\r\nslave0:ip=10.77.0.15,port=6379,state=online,offset=120,lag=0\r\nmaster_replid:abc\r\n", 1, true},
		{"old link listed beside the new", "role:master\r\nconnected_slaves:2\r\n" +
			"slave0:ip=10.77.0.15,port=6379,state=online,offset=100,lag=4\r\n" +
			"slave1:ip=10.77.0.15,port=6379,state=online,offset=120,lag=0\r\nmaster_replid:abc\r\n", 1, true},
		{"two replicas", "role:master\r\nslave0:ip=10.0.0.2,port=6379,state=online,offset=1,lag=0\r\n" +
			"slave1:ip=10.0.0.3,port=6379,state=online,offset=1,lag=0\r\nmaster_replid:abc\r\n", 2, true},
		{"same host, two ports", "role:master\r\nslave0:ip=127.0.0.1,port=7001,state=online,offset=1,lag=0\r\n" +
			"slave1:ip=127.0.0.1,port=7002,state=online,offset=1,lag=0\r\nmaster_replid:abc\r\n", 2, true},
		{"loading is not online", "role:master\r\nslave0:ip=10.0.0.2,port=6379,state=wait_bgsave,offset=0,lag=0\r\nmaster_replid:abc\r\n", 0, true},
		{"a replica's reply", "role:slave\r\nmaster_host:10.0.0.1\r\nslave_read_repl_offset:1\r\nmaster_replid:abc\r\n", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := redis.NewStringCmd(context.Background(), "info", "replication")
			cmd.SetVal(tc.info)
			n, id, ok := parseReplication(cmd)
			if n != tc.n || ok != tc.ok || id != "abc" {
				t.Fatalf("parseReplication = %d, %q, %v; want %d, \"abc\", %v", n, id, ok, tc.n, tc.ok)
			}
		})
	}
}
