package coredns

import (
	"bytes"
)

// UpstreamCorefile is the stand-in for the corporate upstream alone, on ip:53: the blocks that
// sit beside cluster.local in Config's Corefile. A CoreDNS run as in a pod reaches it through
// "forward . /etc/resolv.conf".
func UpstreamCorefile(ip, zoneDir string) string {
	var b bytes.Buffer
	if err := corefile.ExecuteTemplate(&b, "upstream", Config{IP: ip, ZoneDir: zoneDir}); err != nil {
		panic(err) // the template is fixed; an error here is a bug in it
	}
	return b.String()
}
