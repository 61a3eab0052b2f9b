package redistest

import (
	"context"
	"fmt"
	"sort"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// Snapshot returns every key of the server whose name holds name, each
// with its type, its DUMP and whether it has a TTL, sorted: what an
// operation that must change nothing (a bad argument, a key of another
// type) leaves as it found. Compare two snapshots with require.Equal.
func Snapshot(t testing.TB, rdb redis.Cmdable, name string) []string {
	t.Helper()
	ctx := context.Background()
	ks, err := rdb.Keys(ctx, "*"+name+"*").Result()
	require.NoError(t, err)
	out := make([]string, 0, len(ks))
	for _, k := range ks {
		typ, err := rdb.Type(ctx, k).Result()
		require.NoError(t, err)
		dump, err := rdb.Dump(ctx, k).Result()
		require.NoError(t, err)
		pttl, err := rdb.PTTL(ctx, k).Result()
		require.NoError(t, err)
		out = append(out, fmt.Sprintf("%s %s %x %v", k, typ, dump, pttl > 0))
	}
	sort.Strings(out)
	return out
}
