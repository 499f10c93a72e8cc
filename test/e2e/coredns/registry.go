package coredns

import "sync"

var (
	mu      sync.Mutex
	running = map[*Server]bool{}
)

func track(s *Server) {
	mu.Lock()
	defer mu.Unlock()
	running[s] = true
}

func untrack(s *Server) {
	mu.Lock()
	defer mu.Unlock()
	delete(running, s)
}

// StopAll stops every server still running: call it from TestMain, so that no server
// outlives a failed or interrupted test and steals queries from the next run.
func StopAll() {
	mu.Lock()
	servers := make([]*Server, 0, len(running))
	for s := range running {
		servers = append(servers, s)
	}
	mu.Unlock()
	for _, s := range servers {
		s.Stop()
	}
}
