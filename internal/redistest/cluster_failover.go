package redistest

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// ClusterServerArgs appends extra redis-server arguments to every node's
// (after the harness's, so they override them), for example
// ClusterServerArgs("--appendonly", "yes") so that a node restarted after
// a SIGKILL keeps its data. The default is none.
func ClusterServerArgs(args ...string) ClusterOption {
	return func(c *clusterConfig) { c.args = append(c.args, args...) }
}

// KillMasterNow stops master (SIGKILL), runs whileDown (if not nil: its
// replica then holds exactly what a promotion can keep, and nothing more
// reaches it), and has replica, one of master's (ReplicaOf), take over at
// once with CLUSTER FAILOVER
// FORCE (re-sent while the replica answers an error), rather than after
// the cluster node timeout as KillMaster does; the other masters still
// vote. It returns the new master once its role is master, it serves the
// killed master's slots and the running nodes are stable (WaitStable). The
// killed master stays stopped: Restart brings it back as a replica of the
// new master. Writes the replica did not have when the master died are
// lost, as in production. It fails the test if the failover takes more
// than 60 seconds.
func (c *Cluster) KillMasterNow(t testing.TB, master, replica *Server, whileDown func()) *Server {
	t.Helper()
	slot := c.firstSlotOf(t, master)
	master.Stop(t)
	if whileDown != nil {
		whileDown()
	}
	asked := time.Time{}
	c.wait(t, "fail over from the killed "+master.Addr()+" to "+replica.Addr(), func() error {
		ctx, cancel := context.WithTimeout(context.Background(), doTimeout)
		defer cancel()
		v, err := replica.do(ctx, "ROLE")
		if err != nil {
			return err
		}
		if r, _ := v.([]any); len(r) == 0 || r[0] != "master" {
			// A FORCE failover that lost its election is not retried by
			// the replica: ask again every second.
			if time.Since(asked) > time.Second {
				asked = time.Now()
				if _, err := replica.do(ctx, "CLUSTER", "FAILOVER", "FORCE"); err != nil {
					return fmt.Errorf("%s: CLUSTER FAILOVER FORCE: %w", replica.Addr(), err)
				}
			}
			return fmt.Errorf("%s is still %v", replica.Addr(), v)
		}
		if err := c.check(false); err != nil {
			return err
		}
		if m := c.MasterOf(t, slot); m != replica {
			return fmt.Errorf("slot %d is served by %s", slot, m.Addr())
		}
		return nil
	})
	return replica
}
