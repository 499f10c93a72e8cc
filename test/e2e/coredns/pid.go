package coredns

// PID is the CoreDNS process's id, for what only /proc tells (its peak resident memory).
func (s *Server) PID() int { return s.cmd.Process.Pid }
