package coredns

import (
	"context"
	"fmt"
	"regexp"
	"time"
)

var viewSyncedLine = regexp.MustCompile(`(?m)^coredns_nsguard_view_synced(\{[^}]*\})? 1$`)

// ViewSynced reports whether a /metrics page shows nsguard's cluster view synced.
func ViewSynced(page string) bool { return viewSyncedLine.MatchString(page) }

// WaitViewSynced waits up to 30 s for nsguard's cluster view to sync.
func (s *Server) WaitViewSynced(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		if page, err := s.Scrape(); err == nil && ViewSynced(page) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("nsguard's cluster view did not sync in 30s:\n%s", s.Log())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
