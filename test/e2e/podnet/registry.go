package podnet

import (
	"errors"
	"sync"
)

var (
	openMu sync.Mutex
	open   = map[*Network]struct{}{}
)

func track(n *Network) {
	openMu.Lock()
	defer openMu.Unlock()
	open[n] = struct{}{}
}

func untrack(n *Network) {
	openMu.Lock()
	defer openMu.Unlock()
	delete(open, n)
}

// CloseAll closes every Network still open: call it from TestMain, so that no namespace,
// route or address outlives a failed test. A killed test binary leaves them to the next New.
func CloseAll() error {
	openMu.Lock()
	nets := make([]*Network, 0, len(open))
	for n := range open {
		nets = append(nets, n)
	}
	openMu.Unlock()
	var errs []error
	for _, n := range nets {
		errs = append(errs, n.Close())
	}
	return errors.Join(errs...)
}
