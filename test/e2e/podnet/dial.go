package podnet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// Dial connects to address from inside the pod's network namespace, so the connection leaves
// from the pod's address. The socket is made on a thread that enters the namespace and then
// goes back to the host's: a socket stays in the namespace it was made in, so the connection
// can be used from any goroutine afterwards.
//
// The thread must go back, not end: children started with Pdeathsig (the control plane,
// CoreDNS) are killed when the thread that started them ends, whichever thread that was.
func (p *Pod) Dial(ctx context.Context, network, address string) (net.Conn, error) {
	type dialed struct {
		conn net.Conn
		err  error
	}
	ch := make(chan dialed, 1)
	go func() {
		runtime.LockOSThread()
		host, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			ch <- dialed{nil, err}
			return
		}
		defer host.Close()
		if err := enter(p.Netns()); err != nil {
			runtime.UnlockOSThread()
			ch <- dialed{nil, fmt.Errorf("pod %s: %w", p.Name, err)}
			return
		}
		var d net.Dialer
		c, err := d.DialContext(ctx, network, address)
		if back := unix.Setns(int(host.Fd()), unix.CLONE_NEWNET); back != nil {
			// Stuck in the pod's namespace: stay locked, so that the thread ends with this
			// goroutine and nothing else runs there.
			if c != nil {
				c.Close()
			}
			ch <- dialed{nil, errors.Join(err, fmt.Errorf("back to the host's network namespace: %w", back))}
			return
		}
		runtime.UnlockOSThread()
		ch <- dialed{c, err}
	}()
	d := <-ch
	return d.conn, d.err
}

// enter moves the calling thread into the network namespace at path.
func enter(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("setns %s: %w", path, err)
	}
	return nil
}
