package election

import (
	"github.com/redisync/redisync/rlock"
)

// Option configures an Election.
type Option func(*options)

type options struct {
	err error
}

func newOptions(opts []Option) options {
	var o options
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return o
}

// lockOptions are the options of the election's lock: a fair lock,
// fenced (the fencing token is the term).
func (o options) lockOptions() []rlock.Option {
	return []rlock.Option{rlock.WithFencing()}
}
