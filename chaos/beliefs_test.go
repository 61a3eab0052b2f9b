package chaos

import (
	"testing"
	"time"
)

// TestBeliefCheck feeds the belief check made-up intervals: two holders of
// one lock overlapping beyond the margin (as in a split brain) are a
// violation, within it or as two readers they are not, and permits
// believed beyond the total are.
func TestBeliefCheck(t *testing.T) {
	ms := func(n int64) int64 { return n * int64(time.Millisecond) }
	cases := []struct {
		name string
		bs   []belief
		want int
	}{
		{"disjoint", []belief{
			{worker: 0, object: "l", from: ms(0), to: ms(100)},
			{worker: 1, object: "l", from: ms(100), to: ms(200)},
		}, 0},
		{"within the margin", []belief{
			{worker: 0, object: "l", from: ms(0), to: ms(140)},
			{worker: 1, object: "l", from: ms(100), to: ms(200)},
		}, 0},
		{"split brain", []belief{
			{worker: 0, object: "l", from: ms(0), to: ms(2000), lost: true},
			{worker: 1, object: "l", from: ms(500), to: ms(700)},
			{worker: 2, object: "l", from: ms(800), to: ms(900)},
		}, 2},
		{"readers", []belief{
			{worker: 0, object: "rw", mode: beliefRead, from: ms(0), to: ms(500)},
			{worker: 1, object: "rw", mode: beliefRead, from: ms(100), to: ms(600)},
		}, 0},
		{"writer beside a reader", []belief{
			{worker: 0, object: "rw", mode: beliefRead, from: ms(0), to: ms(500)},
			{worker: 1, object: "rw", mode: beliefExclusive, from: ms(100), to: ms(600)},
		}, 1},
		{"permits within the total", []belief{
			{worker: 0, object: "s", mode: beliefPermits, n: 2, from: ms(0), to: ms(500)},
			{worker: 1, object: "s", mode: beliefPermits, n: 1, from: ms(100), to: ms(600)},
			{worker: 2, object: "s", mode: beliefPermits, n: 2, from: ms(500), to: ms(700)},
		}, 0},
		{"permits above the total", []belief{
			{worker: 0, object: "s", mode: beliefPermits, n: 2, from: ms(0), to: ms(500)},
			{worker: 1, object: "s", mode: beliefPermits, n: 2, from: ms(100), to: ms(600)},
		}, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := &run{cfg: Config{Permits: 3, BeliefMargin: defaultBeliefMargin}, h: NewHistory()}
			r.checkBeliefs(c.bs)
			if len(r.violations) != c.want {
				t.Errorf("%d violations, want %d: %v", len(r.violations), c.want, r.violations)
			}
		})
	}
}
