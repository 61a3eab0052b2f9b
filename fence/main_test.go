package fence_test

import (
	"testing"

	"github.com/redisync/redisync/internal/redistest"
)

// exampleAddr is the Redis the examples use; TestMain points it at a
// redis-server the test harness started.
var exampleAddr = "localhost:6379"

func TestMain(m *testing.M) { redistest.Main(m, redistest.WithExampleAddr(&exampleAddr)) }
