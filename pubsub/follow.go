package pubsub

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Following the primary through Sentinel. A planned failover (SENTINEL
// FAILOVER) leaves the former primary up, and a primary, for some seconds
// after +switch-master, until Sentinel reconfigures it as a replica: the
// classic pub/sub connection stays on it, while go-redis's failover client
// sends every command, and so every release's PUBLISH, to the new primary.
// Those messages reach no waiter. go-redis moves its command connections
// when it learns of the switch, but not a pub/sub connection, and it tells
// neither where a connection went; so the Mux learns it from the dials
// themselves, through a go-redis dial hook, and moves the classic
// connection to the primary its commands now reach. The re-subscriptions'
// acknowledgements wake every waiter to re-check (see confirm).

// followInterval is how often, while classic channels are subscribed on a
// failover client, the Mux pings the primary through go-redis's command
// connections (which dials the new primary after a switch) and compares
// the address its commands reach with the classic connection's.
const followInterval = 500 * time.Millisecond

// failoverAddr is the address go-redis gives a failover client
// (redis.NewFailoverClient) in its Options: its dialer asks Sentinel for
// the primary's instead.
const failoverAddr = "FailoverClient"

// follower is the dial hook of a Mux on a go-redis failover client: it
// records the remote address of the latest command connection go-redis
// dialled (the primary then) and that of the latest dial of the Mux's
// classic pub/sub connection, which the Mux marks in the context (see
// dialCtx). It holds no reference to the Mux: go-redis keeps a hook for the
// client's life.
type follower struct {
	mu      sync.Mutex
	primary string // remote address of the latest command connection dialled
	classic string // remote address of the classic pub/sub connection's latest dial
	// dials counts the dials recorded; primaryAt and classicAt are its
	// value at the latest of each kind, so that only a primary dialled
	// after the classic connection moves it.
	dials, primaryAt, classicAt uint64
	dialled                     chan struct{}
}

// followKey is the context key marking the classic connection's dials; its
// value is the follower whose connection it is.
type followKey struct{}

// followerOf returns a follower hooked into rdb's dials when rdb is a
// go-redis failover client, else nil.
func followerOf(rdb redis.UniversalClient) *follower {
	c, ok := rdb.(*redis.Client)
	if !ok || c.Options().Addr != failoverAddr {
		return nil
	}
	f := &follower{dialled: make(chan struct{}, 1)}
	c.AddHook(f)
	return f
}

// DialHook records the remote address of each connection go-redis dials:
// the classic pub/sub connection's when ctx carries the mark of f, the
// primary's for a connection dialled without any Mux's mark.
func (f *follower) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		cn, err := next(ctx, network, addr)
		if err != nil || cn.RemoteAddr() == nil {
			return cn, err
		}
		remote := cn.RemoteAddr().String()
		mark, marked := ctx.Value(followKey{}).(*follower)
		f.mu.Lock()
		switch {
		case mark == f:
			f.dials++
			f.classic, f.classicAt = remote, f.dials
		case !marked && remote != f.primary:
			f.dials++
			f.primary, f.primaryAt = remote, f.dials
			select {
			case f.dialled <- struct{}{}: // the primary may have moved: check now
			default:
			}
		}
		f.mu.Unlock()
		return cn, nil
	}
}

// ProcessHook leaves commands alone.
func (f *follower) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

// ProcessPipelineHook leaves pipelines alone.
func (f *follower) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// astray reports whether go-redis dialled a command connection to another
// address than the classic connection's since the classic connection was
// dialled: the primary moved. A classic connection dialled to another
// address after the command connections' latest dial (go-redis found the
// new primary for it first) stays: the next command connection dialled
// tells.
func (f *follower) astray() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.primary != "" && f.classic != "" && f.primary != f.classic && f.primaryAt > f.classicAt
}

// forget clears the classic connection's address before it is replaced,
// so that it is compared again only once the new connection is dialled.
func (f *follower) forget() {
	f.mu.Lock()
	f.classic = ""
	f.mu.Unlock()
}

// dialCtx marks ctx, for a call on the classic connection that may dial
// it, so that the dial hook records where it went. It returns ctx as it
// is when the Mux follows no primary.
func (m *Mux) dialCtx(ctx context.Context) context.Context {
	if m.follow == nil {
		return ctx
	}
	return context.WithValue(ctx, followKey{}, m.follow)
}

// followLoop runs while the Mux is open on a failover client, from the
// first classic subscription: every followInterval, and at once when a
// command connection is dialled to a new address, it pings through
// go-redis's command connections while classic channels are subscribed,
// and moves the classic connection when the primary its commands reach
// is not the node it is on.
func (m *Mux) followLoop() {
	defer m.loops.Done()
	tick := time.NewTicker(followInterval)
	defer tick.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-tick.C:
			if !m.subscribedClassic() {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), followInterval)
			_ = m.rdb.Ping(ctx).Err() // dials the primary if go-redis dropped its connections
			cancel()
		case <-m.follow.dialled:
		}
		if m.follow.astray() {
			m.moveClassic()
		}
	}
}

// subscribedClassic reports whether a channel is subscribed, or being
// subscribed, on the classic connection.
func (m *Mux) subscribedClassic() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.conns[""]
	return c != nil && m.servesLocked(c)
}

// moveClassic replaces the classic connection by one go-redis dials to the
// primary it now names, and subscribes its channels there: their
// acknowledgements wake every waiter to re-check, since the messages
// published on the new primary meanwhile went nowhere.
func (m *Mux) moveClassic() {
	m.mu.Lock()
	c := m.conns[""]
	var ps *redis.PubSub
	if c != nil {
		ps = c.ps
	}
	m.mu.Unlock()
	if c == nil {
		return
	}
	m.log.Info("redisync: primary moved, moving the pubsub connection to it")
	m.follow.forget()
	m.replace(c, ps, errors.New("the primary moved"))
}
