package chaos

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The network lab of the netns topology: Linux network namespaces joined
// by a bridge, nftables rules that cut or thin the traffic between any
// two of them, and processes started inside them.
//
// Every node (a redis-server, a sentinel, a client, the suite's admin
// connections) has a namespace of its own with one veth pair: "eth0" in
// the node's namespace, with an address in labNet, and its peer in the
// hub namespace, a port of the bridge "br0". Nothing is created outside
// those namespaces: the addresses exist only in them, the root
// namespace gets no interface, route or rule, and deleting the
// namespaces deletes everything (the veths and the nftables tables live
// in them). Every frame between two nodes crosses the hub's bridge,
// where one nftables table (bridge family, forward hook) drops what the
// faults say: both ways or one way between two nodes, all of it or a
// random share (numgen), and a netdev table duplicates a share of the
// frames from one node to another (dup to its port).
//
// The Go clients run in this process: each client's connections are
// dialled from its namespace (nsDialer: a goroutine locked to an OS
// thread that enters the namespace with setns, dials, and exits, taking
// the thread with it), so one process, and one monotonic clock, serves
// every client while each client's packets leave from its own namespace.

// labNet is the private range the lab's addresses come from. It is used
// only inside the lab's namespaces.
const labNet = "10.77.0."

// netLab is one lab: its namespaces, processes and rules.
type netLab struct {
	id    string // prefix of every namespace name: "rsc<pid>x<n>"
	hub   string // the hub namespace
	dir   string // config files, data directories
	mu    sync.Mutex
	nodes []*netNode
	procs []*netProc
	rules map[string]string // nftables rules in force, by name
	dups  map[string]string // netdev dup rules in force, by name

	// spawn starts the lab's processes from one goroutine locked to its
	// OS thread for the lab's life: a child's Pdeathsig fires when the
	// thread that forked it ends, and the dialers' threads end after each
	// dial (nsDialer). Closed by close, which ends the thread.
	spawn     chan spawnReq
	spawnDone chan struct{}
}

type spawnReq struct {
	cmd *exec.Cmd
	err chan error
}

// spawner starts each command it is sent from its locked thread.
func (l *netLab) spawner() {
	runtime.LockOSThread() // never unlocked: the thread ends with the lab
	defer close(l.spawnDone)
	for req := range l.spawn {
		req.err <- req.cmd.Start()
	}
}

// startCmd starts cmd from the spawner's thread.
func (l *netLab) startCmd(cmd *exec.Cmd) error {
	req := spawnReq{cmd, make(chan error, 1)}
	l.spawn <- req
	return <-req.err
}

// netNode is one namespace of the lab.
type netNode struct {
	name string // "s0", "t1", "c2", "adm"
	ns   string
	ip   string
	port string // the node's port in the hub's bridge
}

var labSeq struct {
	mu sync.Mutex
	n  int
}

// netnsUnavailable says why the netns and netcluster topologies cannot
// run here ("" if they can): they need root, ip and nft.
func netnsUnavailable() string {
	if os.Geteuid() != 0 {
		return "the netns and netcluster topologies need root (ip netns, veth, nft); run as root"
	}
	for _, bin := range []string{"ip", "nft"} {
		if _, err := exec.LookPath(bin); err != nil {
			return "the netns and netcluster topologies need " + bin + " (Debian: iproute2, nftables) on the PATH"
		}
	}
	return ""
}

// ipRun runs ip with args (stdin, if not empty, on its standard input)
// and returns its combined output, with the command line in the error.
func ipRun(stdin string, args ...string) (string, error) {
	const name = "ip"
	cmd := exec.Command(name, args...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return out.String(), nil
}

// removeStaleLabs deletes the namespaces of labs whose process is gone
// (a test binary killed before its cleanup ran).
func removeStaleLabs() {
	out, err := ipRun("", "netns", "list")
	if err != nil {
		return
	}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], "rsc") {
			continue
		}
		pidText, _, ok := strings.Cut(strings.TrimPrefix(f[0], "rsc"), "x")
		pid, err := strconv.Atoi(pidText)
		if !ok || err != nil || pid == os.Getpid() {
			continue
		}
		if syscall.Kill(pid, 0) == nil {
			continue // its process still runs
		}
		_, _ = ipRun("", "netns", "del", f[0])
	}
}

// newNetLab creates the hub namespace and its bridge.
func newNetLab() (*netLab, error) {
	removeStaleLabs()
	labSeq.mu.Lock()
	labSeq.n++
	n := labSeq.n
	labSeq.mu.Unlock()
	dir, err := os.MkdirTemp("", "redisync-netns-")
	if err != nil {
		return nil, err
	}
	l := &netLab{id: fmt.Sprintf("rsc%dx%d", os.Getpid(), n), dir: dir, rules: map[string]string{}, dups: map[string]string{},
		spawn: make(chan spawnReq), spawnDone: make(chan struct{})}
	go l.spawner()
	l.hub = l.id + "-hub"
	if _, err := ipRun("", "netns", "add", l.hub); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	for _, args := range [][]string{
		{"-n", l.hub, "link", "set", "lo", "up"},
		{"-n", l.hub, "link", "add", "br0", "type", "bridge"},
		{"-n", l.hub, "link", "set", "br0", "up"},
	} {
		if _, err := ipRun("", args...); err != nil {
			l.close()
			return nil, err
		}
	}
	if err := l.nft(); err != nil {
		l.close()
		return nil, err
	}
	return l, nil
}

// addNode creates node name's namespace with address labNet+host.
func (l *netLab) addNode(name string, host int) (*netNode, error) {
	n := &netNode{name: name, ns: l.id + "-" + name, ip: labNet + strconv.Itoa(host), port: "v" + name}
	l.mu.Lock()
	l.nodes = append(l.nodes, n)
	l.mu.Unlock()
	for _, args := range [][]string{
		{"netns", "add", n.ns},
		{"link", "add", "eth0", "netns", n.ns, "type", "veth", "peer", "name", n.port, "netns", l.hub},
		{"-n", l.hub, "link", "set", n.port, "master", "br0"},
		{"-n", l.hub, "link", "set", n.port, "up"},
		{"-n", n.ns, "addr", "add", n.ip + "/24", "dev", "eth0"},
		{"-n", n.ns, "link", "set", "eth0", "up"},
		{"-n", n.ns, "link", "set", "lo", "up"},
	} {
		if _, err := ipRun("", args...); err != nil {
			return nil, err
		}
	}
	return n, nil
}

// nft replaces the lab's rules: the bridge table drops what l.rules
// says, the netdev table duplicates what l.dups says. The whole set is
// loaded in one transaction.
func (l *netLab) nft() error {
	l.mu.Lock()
	var b strings.Builder
	b.WriteString("table bridge chaos {}\ndelete table bridge chaos\n")
	b.WriteString("table bridge chaos {\n chain forward_cut {\n  type filter hook forward priority 0; policy accept;\n")
	for _, k := range sortedKeys(l.rules) {
		fmt.Fprintf(&b, "  %s\n", l.rules[k])
	}
	b.WriteString(" }\n}\n")
	b.WriteString("table netdev chaosdup {}\ndelete table netdev chaosdup\n")
	if len(l.dups) > 0 {
		b.WriteString("table netdev chaosdup {\n")
		for i, k := range sortedKeys(l.dups) {
			fmt.Fprintf(&b, " chain d%d {\n  %s\n }\n", i, l.dups[k])
		}
		b.WriteString("}\n")
	}
	l.mu.Unlock()
	_, err := ipRun(b.String(), "netns", "exec", l.hub, "nft", "-f", "-")
	return err
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// drop drops the frames from every node of from to every node of to (one
// way), all of them if percent is 100, a random share otherwise, under
// the rule name (which undo removes).
func (l *netLab) drop(name string, from, to []*netNode, percent int) error {
	l.mu.Lock()
	var i int
	for _, a := range from {
		for _, b := range to {
			rule := fmt.Sprintf("ip saddr %s ip daddr %s", a.ip, b.ip)
			if percent < 100 {
				rule += fmt.Sprintf(" numgen random mod 100 < %d", percent)
			}
			l.rules[fmt.Sprintf("%s/%03d", name, i)] = rule + " drop"
			i++
		}
	}
	l.mu.Unlock()
	return l.nft()
}

// dup duplicates percent of the frames from node a to node b (each copy
// sent once more out of b's port), under the rule name.
func (l *netLab) dup(name string, a, b *netNode, percent int) error {
	l.mu.Lock()
	l.dups[name] = fmt.Sprintf("type filter hook ingress device %q priority 0; ip daddr %s numgen random mod 100 < %d dup to %q",
		a.port, b.ip, percent, b.port)
	l.mu.Unlock()
	return l.nft()
}

// undo removes the rules named name (and name/…).
func (l *netLab) undo(name string) error {
	l.mu.Lock()
	for k := range l.rules {
		if k == name || strings.HasPrefix(k, name+"/") {
			delete(l.rules, k)
		}
	}
	delete(l.dups, name)
	l.mu.Unlock()
	return l.nft()
}

// heal removes every rule.
func (l *netLab) heal() error {
	l.mu.Lock()
	l.rules, l.dups = map[string]string{}, map[string]string{}
	l.mu.Unlock()
	return l.nft()
}

// close kills the lab's processes, deletes its namespaces (and with them
// its veths and nftables tables) and its directory. It is safe to call
// more than once.
func (l *netLab) close() {
	l.mu.Lock()
	procs, nodes := l.procs, l.nodes
	l.procs, l.nodes = nil, nil
	l.mu.Unlock()
	for _, p := range procs {
		p.stop()
	}
	if l.spawn != nil {
		close(l.spawn)
		<-l.spawnDone
		l.spawn = nil
	}
	for _, n := range nodes {
		_, _ = ipRun("", "netns", "del", n.ns)
	}
	if l.hub != "" {
		_, _ = ipRun("", "netns", "del", l.hub)
		l.hub = ""
	}
	_ = os.RemoveAll(l.dir)
}

// nsDialer returns a Dialer whose connections are made from namespace ns:
// each dial runs on a goroutine locked to its OS thread, which enters ns
// with setns and is never unlocked, so the runtime ends the thread when
// the goroutine returns; no other goroutine ever runs in ns. The socket
// stays in ns after the thread is gone.
func nsDialer(ns string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		type result struct {
			c   net.Conn
			err error
		}
		ch := make(chan result, 1)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread dies with this goroutine
			f, err := os.Open(filepath.Join("/var/run/netns", ns))
			if err != nil {
				ch <- result{nil, err}
				return
			}
			err = unix.Setns(int(f.Fd()), unix.CLONE_NEWNET)
			_ = f.Close()
			if err != nil {
				ch <- result{nil, fmt.Errorf("setns %s: %w", ns, err)}
				return
			}
			d := net.Dialer{Timeout: 5 * time.Second}
			c, err := d.DialContext(ctx, network, addr)
			ch <- result{c, err}
		}()
		r := <-ch
		return r.c, r.err
	}
}

// netProc is a process started in a namespace.
type netProc struct {
	name string
	ns   string
	bin  string
	args []string
	env  []string
	addr string // host:port it answers PING on, dialled from admNS
	adm  func(ctx context.Context, network, addr string) (net.Conn, error)
	lab  *netLab

	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{}
	out     *bytes.Buffer
	waitErr error // cmd.Wait's, once done is closed
}

// start starts p (ip netns exec NS bin args…) and waits until it answers
// PING.
func (l *netLab) start(p *netProc) error {
	l.mu.Lock()
	l.procs = append(l.procs, p)
	l.mu.Unlock()
	p.lab = l
	return p.launch()
}

func (p *netProc) launch() error {
	p.mu.Lock()
	cmd := exec.Command("ip", append([]string{"netns", "exec", p.ns, p.bin}, p.args...)...)
	cmd.Env = append(os.Environ(), p.env...)
	p.out = &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = &syncWriter{b: p.out, mu: &p.mu}, &syncWriter{b: p.out, mu: &p.mu}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.WaitDelay = time.Second
	if err := p.lab.startCmd(cmd); err != nil {
		p.mu.Unlock()
		return fmt.Errorf("start %s in %s: %w", p.bin, p.ns, err)
	}
	done := make(chan struct{})
	p.cmd, p.done = cmd, done
	p.mu.Unlock()
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		p.waitErr = err
		p.mu.Unlock()
		close(done)
	}()
	deadline := time.Now().Add(15 * time.Second)
	for {
		if err := p.ping(); err == nil {
			return nil
		} else if time.Now().After(deadline) {
			p.stop()
			return fmt.Errorf("%s (%s) does not answer on %s: %v; output:\n%s", p.name, p.bin, p.addr, err, p.output())
		}
		select {
		case <-done:
			p.mu.Lock()
			err := p.waitErr
			p.mu.Unlock()
			return fmt.Errorf("%s (%s) exited: %v; output:\n%s", p.name, p.bin, err, p.output())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (p *netProc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// ping sends PING on a new connection from the admin namespace.
func (p *netProc) ping() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	c, err := p.adm(ctx, "tcp", p.addr)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		return err
	}
	buf := make([]byte, 64)
	n, err := c.Read(buf)
	if err != nil {
		return err
	}
	if !strings.HasPrefix(string(buf[:n]), "+PONG") {
		return fmt.Errorf("PING answered %q", buf[:n])
	}
	return nil
}

// signal sends sig to p's process.
func (p *netProc) signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.cmd.Process == nil {
		return errors.New(p.name + " is not running")
	}
	return p.cmd.Process.Signal(sig)
}

// stop kills p and waits for it.
func (p *netProc) stop() {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.cmd = nil
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-done
}

type syncWriter struct {
	b  *bytes.Buffer
	mu *sync.Mutex
}

func (w *syncWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.b.Len() > 64<<10 {
		w.b.Reset()
	}
	return w.b.Write(b)
}
