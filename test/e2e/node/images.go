package node

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/nsguard/nsguard/test/e2e/resolvers"
)

// Images of the node, all built here and imported into containerd; Pods never pull.
const (
	// CoreDNSImage is deploy/kubernetes's image name: hack/check-image.sh's build of
	// deploy/Dockerfile, under the name the overlay gives it, as a registry would hold it.
	CoreDNSImage = "registry.example.com/platform/nsguard/coredns:v1.15.0"
	// StockCoreDNSImage is CoreDNS v1.15.0 as released, without nsguard, for kubeadm's CoreDNS:
	// built here from the v1.15.0 module under its released name, so kubeadm's manifest runs as is.
	StockCoreDNSImage = "registry.k8s.io/coredns/coredns:v1.15.0"
	// LoadImage resolves without pause with Go's resolver (loadlookup).
	LoadImage = "localhost/nsguard-e2e/load:1"
)

// ClientImage is the image of a resolver's client Pod: /pause at rest, /lookup NAME to resolve.
func ClientImage(k resolvers.Kind) string { return "localhost/nsguard-e2e/lookup-" + k.String() + ":1" }

// builder builds images with buildah in hack/check-image.sh's storage and imports them.
// An image whose files are the same as a last run's is imported from that run's archive,
// kept under the cache by the hash of its files, without building it again.
type builder struct {
	root, dir string // the repository, and a scratch directory
	store     string // buildah's
	archives  string // the images' OCI archives, by content
	// bin holds the binaries the images are made of, from one run to the next: go build
	// links again only when a binary's inputs changed (its build ID), and a CoreDNS link
	// takes seconds.
	bin string
}

func newBuilder(root, dir string) *builder {
	cache := os.Getenv("NSGUARD_CACHE")
	if cache == "" {
		cache = filepath.Join(os.Getenv("HOME"), ".cache", "nsguard")
	}
	return &builder{root: root, dir: dir, store: filepath.Join(cache, "buildah"), archives: filepath.Join(cache, "node-images"),
		bin: filepath.Join(cache, "node-bin")}
}

// contentKey hashes what makes an image: its name, user and entrypoint, and each file of its
// root file system with its path, mode and extended attributes (the binary's capability).
func contentKey(name, rootfs, user string, entrypoint []string) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\n%q\n", name, user, entrypoint)
	err := filepath.WalkDir(rootfs, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		st, err := os.Stat(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(rootfs, path)
		caps, _ := run("getcap", path)
		fmt.Fprintf(h, "%s %o %s\n", rel, st.Mode(), strings.TrimPrefix(strings.TrimSpace(caps), path))
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(h, f)
		return err
	})
	return hex.EncodeToString(h.Sum(nil))[:16], err
}

// archive is where the image name of key is kept.
func (b *builder) archive(name, key string) string {
	return filepath.Join(b.archives, strings.NewReplacer("/", "_", ":", "_").Replace(name)+"-"+key+".tar")
}

// cached imports the archive of key if an earlier run left it, and reports whether it did.
func (b *builder) cached(ctx context.Context, name, key string) bool {
	archive := b.archive(name, key)
	if _, err := os.Stat(archive); err != nil {
		return false
	}
	if _, err := ctr(ctx, "images", "import", archive); err != nil {
		os.Remove(archive) // a broken one is built again
		return false
	}
	return true
}

func (b *builder) buildah(ctx context.Context, args ...string) (string, error) {
	base := []string{"--root", filepath.Join(b.store, "root"), "--runroot", filepath.Join(b.store, "runroot"), "--storage-driver", "vfs"}
	out, err := exec.CommandContext(ctx, "buildah", append(base, args...)...).Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		return "", fmt.Errorf("buildah %s: %v: %s", strings.Join(args, " "), err, stderr)
	}
	return strings.TrimSpace(string(out)), nil
}

// importImage pushes a built image to an OCI archive under name, kept by key, and imports it
// into the node's containerd.
func (b *builder) importImage(ctx context.Context, image, name, key string) error {
	if err := os.MkdirAll(b.archives, 0o755); err != nil {
		return err
	}
	archive := b.archive(name, key)
	tmp := archive + ".tmp"
	if _, err := b.buildah(ctx, "push", "--quiet", image, "oci-archive:"+tmp+":"+name); err != nil {
		return err
	}
	if err := os.Rename(tmp, archive); err != nil {
		return err
	}
	// The same image's older archives: the cache keeps one per image.
	old, _ := filepath.Glob(strings.TrimSuffix(archive, key+".tar") + "*.tar")
	for _, o := range old {
		if o != archive {
			os.Remove(o)
		}
	}
	_, err := ctr(ctx, "images", "import", archive)
	return err
}

// fromRootfs builds image name from the directory rootfs, run as user with entrypoint.
func (b *builder) fromRootfs(ctx context.Context, name, rootfs, user string, entrypoint ...string) error {
	key, err := contentKey(name, rootfs, user, entrypoint)
	if err != nil {
		return err
	}
	if b.cached(ctx, name, key) {
		return nil
	}
	c, err := b.buildah(ctx, "from", "--quiet", "scratch")
	if err != nil {
		return err
	}
	defer b.buildah(context.WithoutCancel(ctx), "rm", c) //nolint:errcheck
	if _, err := b.buildah(ctx, "copy", "--quiet", c, rootfs+"/", "/"); err != nil {
		return err
	}
	ep := `["` + strings.Join(entrypoint, `","`) + `"]`
	if _, err := b.buildah(ctx, "config", "--entrypoint", ep, "--cmd", "", "--user", user, c); err != nil {
		return err
	}
	if _, err := b.buildah(ctx, "commit", "--quiet", "--rm", c, name); err != nil {
		return err
	}
	return b.importImage(ctx, name, name, key)
}

// stage copies files (image path -> host path) into a fresh rootfs, with the shared
// libraries each dynamically linked one needs (ldd), and returns the rootfs.
func (b *builder) stage(name string, files map[string]string, extra map[string]string) (string, error) {
	rootfs := filepath.Join(b.dir, "rootfs-"+strings.NewReplacer("/", "_", ":", "_").Replace(name))
	if err := os.RemoveAll(rootfs); err != nil {
		return "", err
	}
	put := func(dst, src string, mode os.FileMode) error {
		data, err := os.ReadFile(src) // follows symlinks: a library's real file under its name
		if err != nil {
			return err
		}
		p := filepath.Join(rootfs, dst)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		return os.WriteFile(p, data, mode)
	}
	for dst, src := range files {
		if err := put(dst, src, 0o755); err != nil {
			return "", err
		}
		libs, err := sharedLibraries(src)
		if err != nil {
			return "", err
		}
		for _, lib := range libs {
			if err := put(lib, lib, 0o755); err != nil {
				return "", err
			}
		}
	}
	for dst, content := range extra {
		p := filepath.Join(rootfs, dst)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return "", err
		}
	}
	return rootfs, nil
}

var lddPath = regexp.MustCompile(`(?m)(?:=> )?(/\S+) \(0x[0-9a-f]+\)`)

// sharedLibraries lists the libraries and loader a binary loads; none for a static one.
func sharedLibraries(bin string) ([]string, error) {
	out, err := exec.Command("ldd", bin).CombinedOutput()
	if err != nil {
		if strings.Contains(string(out), "not a dynamic executable") {
			return nil, nil
		}
		return nil, fmt.Errorf("ldd %s: %v: %s", bin, err, out)
	}
	var libs []string
	for _, m := range lddPath.FindAllStringSubmatch(string(out), -1) {
		libs = append(libs, m[1])
	}
	return libs, nil
}

// goBuild builds a main package of this module, static.
func (b *builder) goBuild(ctx context.Context, pkg, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", "-s -w", "-o", out, pkg)
	cmd.Dir = b.root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if o, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %v\n%s", pkg, err, o)
	}
	return nil
}

// buildImages builds and imports every image the node's Pods run: the sandbox, CoreDNS as
// released and with nsguard, a client image per resolver and the load client. It returns the
// released CoreDNS's binary, which serves the upstream stand-in too.
func buildImages(ctx context.Context, root, dir string) (stockCoreDNS string, err error) {
	b := newBuilder(root, dir)
	bin := b.bin
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return "", err
	}
	pause := filepath.Join(bin, "pause")
	if err := b.goBuild(ctx, "./test/e2e/node/pause", pause); err != nil {
		return "", err
	}
	rootfs, err := b.stage(PauseImage, map[string]string{"/pause": pause}, nil)
	if err != nil {
		return "", err
	}
	if err := b.fromRootfs(ctx, PauseImage, rootfs, "65535:65535", "/pause"); err != nil {
		return "", err
	}

	// Resolvers: the suite's own lookup programs, with the Pod's resolv.conf read at run time.
	clients, err := resolvers.Build(ctx, filepath.Join(dir, "resolvers"))
	if err != nil {
		return "", err
	}
	nss := map[string]string{"/etc/nsswitch.conf": "hosts: files dns\n"}
	for _, k := range resolvers.Kinds {
		rootfs, err := b.stage(ClientImage(k), map[string]string{"/pause": pause, "/lookup": clients.Binary(k)}, nss)
		if err != nil {
			return "", err
		}
		if err := b.fromRootfs(ctx, ClientImage(k), rootfs, "65532:65532", "/pause"); err != nil {
			return "", err
		}
	}
	load := filepath.Join(bin, "loadlookup")
	if err := b.goBuild(ctx, "./test/e2e/node/loadlookup", load); err != nil {
		return "", err
	}
	if rootfs, err = b.stage(LoadImage, map[string]string{"/loadlookup": load}, nil); err != nil {
		return "", err
	}
	if err := b.fromRootfs(ctx, LoadImage, rootfs, "65532:65532", "/loadlookup"); err != nil {
		return "", err
	}

	// CoreDNS v1.15.0 as released: the module's own main package, staged as deploy/Dockerfile
	// stages cmd/coredns, with the capability to bind port 53 as user 65532.
	stock := filepath.Join(bin, "coredns-stock")
	if err := b.goBuild(ctx, "github.com/coredns/coredns", stock); err != nil {
		return "", err
	}
	if rootfs, err = b.stage(StockCoreDNSImage, map[string]string{"/coredns": stock}, map[string]string{
		"/etc/passwd": "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n",
		"/etc/group":  "root:x:0:\nnonroot:x:65532:\n",
	}); err != nil {
		return "", err
	}
	if _, err := run("setcap", "cap_net_bind_service=+ep", filepath.Join(rootfs, "coredns")); err != nil {
		return "", err
	}
	if err := b.fromRootfs(ctx, StockCoreDNSImage, rootfs, "65532:65532", "/coredns"); err != nil {
		return "", err
	}

	// CoreDNS with nsguard, as hack/check-image.sh builds and checks it, unless the binary it
	// would build (the same flags) is the one of an image built before.
	own := filepath.Join(bin, "coredns-nsguard")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", "-s -w", "-o", own, "./cmd/coredns")
	cmd.Dir, cmd.Env = root, append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/coredns: %v\n%s", err, out)
	}
	key, err := fileKey(CoreDNSImage, own, filepath.Join(root, "deploy", "Dockerfile"))
	if err != nil {
		return "", err
	}
	if b.cached(ctx, CoreDNSImage, key) {
		return stock, nil
	}
	const tag = "nsguard-coredns:node"
	cmd = exec.CommandContext(ctx, filepath.Join(root, "hack", "check-image.sh"), tag)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("hack/check-image.sh %s: %v\n%s", tag, err, out)
	}
	return stock, b.importImage(ctx, tag, CoreDNSImage, key)
}

// fileKey hashes a name and the contents of files.
func fileKey(name string, files ...string) (string, error) {
	h := sha256.New()
	fmt.Fprintln(h, name)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}
