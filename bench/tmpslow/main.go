package main

import (
	"context"
	"fmt"
	"sort"

	"github.com/redis/go-redis/v9"
)

func main() {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:7391"})
	ctx := context.Background()
	logs, err := c.SlowLogGet(ctx, 1000000).Result()
	if err != nil {
		panic(err)
	}
	type agg struct{ n int; sum float64; args int }
	m := map[string]*agg{}
	for _, l := range logs {
		k := l.Args[0]
		if len(l.Args) > 1 && (k == "evalsha" || k == "EVALSHA") {
			k = k + " " + l.Args[1][:8] + fmt.Sprintf(" nkeys=%s", l.Args[2])
		}
		a := m[k]
		if a == nil { a = &agg{}; m[k] = a }
		a.n++
		a.sum += float64(l.Duration.Microseconds())
		a.args = len(l.Args)
	}
	keys := []string{}
	for k := range m { keys = append(keys, k) }
	sort.Strings(keys)
	for _, k := range keys {
		a := m[k]
		if a.n < 100 { continue }
		fmt.Printf("%-40s n=%6d mean=%.2f us args=%d\n", k, a.n, a.sum/float64(a.n), a.args)
	}
}
