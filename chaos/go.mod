module github.com/redisync/redisync/chaos

go 1.25.0

replace (
	github.com/redisync/redisync => ../
	github.com/redisync/redisync/extra/gocronlock => ../extra/gocronlock
)

require (
	github.com/anishathalye/porcupine v1.3.1
	github.com/redis/go-redis/v9 v9.22.0
	github.com/redisync/redisync v0.0.0-00010101000000-000000000000
	github.com/redisync/redisync/extra/gocronlock v0.0.0-00010101000000-000000000000
	golang.org/x/sys v0.47.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/go-co-op/gocron/v2 v2.21.2 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/jonboulle/clockwork v0.5.0 // indirect
	github.com/robfig/cron/v3 v3.0.1 // indirect
	github.com/stretchr/testify v1.12.1 // indirect
	go.uber.org/atomic v1.11.0 // indirect
	go.uber.org/goleak v1.3.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)
