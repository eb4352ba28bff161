package image

import (
	"compress/gzip"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/klauspost/compress/zstd"

	"alpnib.dev/internal/atomicfile"
	"alpnib.dev/internal/keylock"
	"alpnib.dev/nibrunner/image/flatten"
	"alpnib.dev/nibrunner/layer"
)

// Defaults for Options' zero values.
const (
	DefaultStallTimeout     = 30 * time.Second
	DefaultMaxUnpackedBytes = 8 << 30
)

// Options are a host's pull settings.
type Options struct {
	// CacheDir holds images/ (one folder per reference digest, each with
	// image.squashfs and image.json) and tmp/ (pulls under way). Required.
	CacheDir string
	// AuthFile is a Docker config.json whose "auths" give each registry's
	// credentials; it must be a regular file owned by root with mode 0600
	// or stricter. Empty: every registry is pulled anonymously.
	AuthFile string
	// CAFile is a PEM bundle trusted beside the system's roots. Empty: the
	// system's roots only.
	CAFile string
	// PlainHTTP names registries (host:port) reached without TLS. Each must
	// be a loopback address (127.0.0.0/8, ::1, localhost); any other is
	// refused by New. No other registry is ever spoken to without TLS.
	PlainHTTP []string
	// StallTimeout fails a pull when the registry sends nothing (no
	// response, no byte of a body) for this long. Zero: DefaultStallTimeout.
	StallTimeout time.Duration
	// MaxUnpackedBytes bounds the image's uncompressed layers, summed. Zero:
	// DefaultMaxUnpackedBytes.
	MaxUnpackedBytes int64
	// Mksquashfs is the packer's path; empty means look it up on PATH.
	Mksquashfs string
}

// progressEvery is how often a pull reports the bytes of a blob being
// downloaded (applying a layer reports as it goes).
const progressEvery = 250 * time.Millisecond

// Progress is one report of a pull under way.
type Progress struct {
	Ref string
	// Phase is "manifest", "layers", "pack" or "done".
	Phase string
	// Fetched is the compressed layer bytes received so far, of
	// FetchTotal (the manifest's layer sizes summed).
	Fetched, FetchTotal int64
	// Unpacked is the uncompressed layer bytes applied so far.
	Unpacked int64
	// Layer is the layer being applied (1-based) of Layers.
	Layer, Layers int
}

// Image is a pulled image, flattened and packed.
type Image struct {
	// Ref is the reference pulled, as given (by digest).
	Ref string `json:"ref"`
	// Digest is the reference's digest: the cache's key.
	Digest string `json:"digest"`
	// ManifestDigest is the linux/amd64 image manifest's digest: Digest
	// itself, or the one an index chose.
	ManifestDigest string `json:"manifestDigest"`
	// Path is the read-only squashfs holding the flattened image.
	Path string `json:"-"`
	// Size is the squashfs's size in bytes.
	Size int64 `json:"size"`
	// SquashfsDigest is "sha256:" and the squashfs's hex digest.
	SquashfsDigest string `json:"squashfsDigest"`
	// Config is what the image implies about running it: entrypoint, cmd,
	// env, working directory, user, exposed ports. Nothing here is applied
	// by this package.
	Config v1.Config `json:"config"`
	// Cached says the image came from the cache, fetching nothing.
	Cached bool `json:"-"`
}

// Puller pulls images into a cache. It is safe for concurrent use; pulls
// of the same digest wait for one another and fetch once.
type Puller struct {
	opts      Options
	keys      *keychain
	transport http.RoundTripper
	plain     map[string]bool

	locks keylock.Map // per digest: one pull of an image at a time
}

// New checks the settings (credentials file, CA file, plain-HTTP
// registries) and prepares the cache folder.
func New(opts Options) (*Puller, error) {
	if opts.CacheDir == "" {
		return nil, &Error{Reason: ReasonConfig, Sentence: "the image cache folder is not set"}
	}
	p, err := newClient(opts)
	if err != nil {
		return nil, err
	}
	for _, sub := range []string{"images", "tmp"} {
		if err := os.MkdirAll(filepath.Join(opts.CacheDir, sub), 0o700); err != nil {
			return nil, &Error{Reason: ReasonLocal, Sentence: "the image cache folder cannot be made", Err: err}
		}
	}
	// A pull cut short by a crash left its staging here; none is trusted.
	tmps, _ := os.ReadDir(filepath.Join(opts.CacheDir, "tmp"))
	for _, e := range tmps {
		_ = os.RemoveAll(filepath.Join(opts.CacheDir, "tmp", e.Name()))
	}
	return p, nil
}

// NewInspector checks the same settings as New but makes a Puller that
// only inspects: it has no cache and touches nothing on disk, so it may
// run beside a daemon pulling into the cache. Its Pull is refused.
func NewInspector(opts Options) (*Puller, error) {
	opts.CacheDir = ""
	return newClient(opts)
}

// newClient is a Puller's registry side: settings, credentials, transport.
func newClient(opts Options) (*Puller, error) {
	if opts.StallTimeout == 0 {
		opts.StallTimeout = DefaultStallTimeout
	}
	if opts.MaxUnpackedBytes == 0 {
		opts.MaxUnpackedBytes = DefaultMaxUnpackedBytes
	}
	p := &Puller{opts: opts, plain: map[string]bool{}}
	for _, r := range opts.PlainHTTP {
		if !loopback(r) {
			return nil, &Error{Reason: ReasonConfig, Sentence: fmt.Sprintf("plain HTTP is allowed only to a registry on this machine's loopback, not %q; give that registry TLS (and its CA in the CA file)", r)}
		}
		p.plain[r] = true
	}
	if opts.AuthFile != "" {
		k, err := loadAuthFile(opts.AuthFile)
		if err != nil {
			return nil, &Error{Reason: ReasonConfig, Sentence: err.Error()}
		}
		p.keys = k
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if opts.CAFile != "" {
		pem, err := os.ReadFile(opts.CAFile)
		if err != nil {
			return nil, &Error{Reason: ReasonConfig, Sentence: fmt.Sprintf("the registry CA file %s cannot be read", opts.CAFile), Err: err}
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, &Error{Reason: ReasonConfig, Sentence: fmt.Sprintf("the registry CA file %s holds no PEM certificate", opts.CAFile)}
		}
	}
	base := remote.DefaultTransport.(*http.Transport).Clone()
	base.Proxy = nil // a host's registries are named, not reached through the environment's proxy
	base.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	base.ResponseHeaderTimeout = opts.StallTimeout
	base.TLSHandshakeTimeout = opts.StallTimeout
	base.DialContext = (&net.Dialer{Timeout: opts.StallTimeout, KeepAlive: 30 * time.Second}).DialContext
	p.transport = &guard{base: base, plain: p.plain, stall: opts.StallTimeout}
	return p, nil
}

func loopback(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// Cached returns the cached image for ref, if it was pulled before.
func (p *Puller) Cached(ref Reference) (Image, bool) {
	dir := p.imageDir(ref.Digest)
	b, err := os.ReadFile(filepath.Join(dir, "image.json"))
	if err != nil {
		return Image{}, false
	}
	var img Image
	if json.Unmarshal(b, &img) != nil || img.Digest != ref.Digest {
		return Image{}, false
	}
	fi, err := os.Stat(filepath.Join(dir, "image.squashfs"))
	if err != nil || fi.Size() != img.Size {
		return Image{}, false
	}
	img.Path = filepath.Join(dir, "image.squashfs")
	img.Ref = ref.String()
	img.Cached = true
	return img, true
}

func (p *Puller) imageDir(digest string) string {
	return filepath.Join(p.opts.CacheDir, "images", strings.Replace(digest, ":", "-", 1))
}

func (p *Puller) lock(digest string) func() { return p.locks.Lock(digest) }

// Pull makes ref's linux/amd64 image ready as one squashfs, from the cache
// when it was pulled before. progress, when set, is called from Pull's
// goroutine as bytes arrive and layers apply. A failure is an *Error.
func (p *Puller) Pull(ctx context.Context, ref string, progress func(Progress)) (Image, error) {
	r, err := ParseReference(ref)
	if err != nil {
		return Image{}, &Error{Ref: ref, Reason: ReasonBadReference, Sentence: err.Error()}
	}
	if p.opts.CacheDir == "" {
		return Image{}, &Error{Ref: ref, Reason: ReasonConfig, Sentence: "this puller was made to inspect images only (NewInspector) and has no cache to pull into"}
	}
	if progress == nil {
		progress = func(Progress) {}
	}
	unlock := p.lock(r.Digest)
	defer unlock()
	if img, ok := p.Cached(r); ok {
		progress(Progress{Ref: r.String(), Phase: "done"})
		return img, nil
	}
	img, err := p.pull(ctx, r, progress)
	if err != nil {
		return Image{}, classify(r, err)
	}
	return img, nil
}

func (p *Puller) remoteOptions(ctx context.Context) []remote.Option {
	return []remote.Option{
		remote.WithContext(ctx),
		remote.WithTransport(p.transport),
		remote.WithAuthFromKeychain(p.keys),
		remote.WithPlatform(v1.Platform{OS: "linux", Architecture: "amd64"}),
		// The caller retries with its own backoff and reports each reason.
		remote.WithRetryBackoff(remote.Backoff{Steps: 1}),
	}
}

// resolved is an image's manifest and config, fetched and verified, and
// its layers checked for what this package can unpack.
type resolved struct {
	img      v1.Image
	digest   v1.Hash // the linux/amd64 image manifest's
	manifest *v1.Manifest
	config   *v1.ConfigFile
}

// resolve fetches r's manifest (choosing linux/amd64 from an index) and
// config blob, checking each against its digest, without any layer.
func (p *Puller) resolve(ctx context.Context, r Reference) (resolved, error) {
	var nopts []name.Option
	if p.plain[r.Registry] {
		nopts = append(nopts, name.Insecure)
	}
	nd, err := r.name(nopts...)
	if err != nil {
		return resolved{}, err
	}
	desc, err := remote.Get(nd, p.remoteOptions(ctx)...)
	if err != nil {
		return resolved{}, fmt.Errorf("fetch the manifest: %w", err)
	}
	img, err := platformImage(desc)
	if err != nil {
		return resolved{}, err
	}
	mdigest, err := img.Digest()
	if err != nil {
		return resolved{}, err
	}
	manifest, err := img.Manifest()
	if err != nil {
		return resolved{}, fmt.Errorf("read the manifest: %w", err)
	}
	rawCfg, err := img.RawConfigFile()
	if err != nil {
		return resolved{}, fmt.Errorf("fetch the config blob: %w", err)
	}
	if got := sha256Hex(rawCfg); "sha256:"+got != manifest.Config.Digest.String() {
		return resolved{}, &Error{Reason: ReasonDigestMismatch, Sentence: fmt.Sprintf("the config blob hashes to sha256:%s, not %s as the manifest says", got, manifest.Config.Digest)}
	}
	cfg, err := v1.ParseConfigFile(strings.NewReader(string(rawCfg)))
	if err != nil {
		return resolved{}, fmt.Errorf("read the config blob: %w", err)
	}
	if cfg.OS != "" && (cfg.OS != "linux" || cfg.Architecture != "amd64") {
		return resolved{}, &Error{Reason: ReasonNoPlatform, Sentence: fmt.Sprintf("the image is for %s/%s, and nibrunner runs linux/amd64; name the linux/amd64 image's digest", cfg.OS, cfg.Architecture)}
	}
	if len(cfg.RootFS.DiffIDs) != len(manifest.Layers) {
		return resolved{}, &Error{Reason: ReasonRegistry, Sentence: fmt.Sprintf("the manifest lists %d layers but the config %d diff_ids; the image is malformed", len(manifest.Layers), len(cfg.RootFS.DiffIDs))}
	}
	for _, l := range manifest.Layers {
		if len(l.URLs) > 0 {
			return resolved{}, &Error{Reason: ReasonRegistry, Sentence: fmt.Sprintf("layer %s is non-distributable (it names URLs outside the registry), which nibrunner does not fetch", l.Digest)}
		}
		if _, err := decompressor(l.MediaType); err != nil {
			return resolved{}, err
		}
	}
	return resolved{img: img, digest: mdigest, manifest: manifest, config: cfg}, nil
}

func (p *Puller) pull(ctx context.Context, r Reference, progress func(Progress)) (Image, error) {
	prog := Progress{Ref: r.String(), Phase: "manifest"}
	progress(prog)
	res, err := p.resolve(ctx, r)
	if err != nil {
		return Image{}, err
	}
	img, mdigest, manifest, cfg := res.img, res.digest, res.manifest, res.config
	for _, l := range manifest.Layers {
		prog.FetchTotal += l.Size
	}
	prog.Layers = len(manifest.Layers)

	stage, err := os.MkdirTemp(filepath.Join(p.opts.CacheDir, "tmp"), "pull-")
	if err != nil {
		return Image{}, err
	}
	defer os.RemoveAll(stage)
	tree := filepath.Join(stage, "root")
	if err := os.Mkdir(tree, 0o755); err != nil {
		return Image{}, err
	}
	// The next blob downloads while one is applied: each report counts
	// the bytes fetched so far, as fetchedSum (below) sums them.
	var fetchedSum func() int64
	t, err := flatten.Open(tree, flatten.Options{MaxBytes: p.opts.MaxUnpackedBytes, Progress: func(n int64) {
		prog.Unpacked, prog.Fetched = n, fetchedSum()
		progress(prog)
	}})
	if err != nil {
		return Image{}, err
	}
	defer t.Close()

	// Blobs are fetched in order into stage, each verified whole before
	// the flattener reads a byte of it, while the layer before is applied.
	type fetched struct {
		path string
		err  error
	}
	fetchedBytes := make([]atomic.Int64, len(manifest.Layers)) // per blob, so far; read for progress
	results := make([]chan fetched, len(manifest.Layers))
	for i := range results {
		results[i] = make(chan fetched, 1)
	}
	// On an early return the fetcher is cancelled first, then awaited.
	var wg sync.WaitGroup
	defer wg.Wait()
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i, l := range manifest.Layers {
			path := filepath.Join(stage, "blob-"+l.Digest.Hex)
			err := fetchBlob(fctx, img, l, path, fetchedBytes[i].Store)
			results[i] <- fetched{path: path, err: err}
			if err != nil {
				return
			}
		}
	}()
	fetchedSum = func() int64 {
		var s int64
		for i := range fetchedBytes {
			s += fetchedBytes[i].Load()
		}
		return s
	}
	prog.Phase = "layers"
	progress(prog)
	// While a blob downloads nothing else reports, so a tick does.
	tick := time.NewTicker(progressEvery)
	defer tick.Stop()
	for i, l := range manifest.Layers {
		var res fetched
	wait:
		for {
			select {
			case res = <-results[i]:
				break wait
			case <-tick.C:
				prog.Fetched = fetchedSum()
				progress(prog)
			case <-ctx.Done():
				return Image{}, ctx.Err()
			}
		}
		if res.err != nil {
			return Image{}, fmt.Errorf("layer %d (%s): %w", i+1, l.Digest, res.err)
		}
		prog.Layer, prog.Fetched = i+1, fetchedSum()
		progress(prog)
		if err := apply(ctx, t, l, cfg.RootFS.DiffIDs[i], res.path); err != nil {
			var fe *flatten.Error
			if errors.As(err, &fe) {
				return Image{}, refused(fe, l.Digest)
			}
			return Image{}, fmt.Errorf("layer %d (%s): %w", i+1, l.Digest, err)
		}
		_ = os.Remove(res.path)
	}
	prog.Phase = "pack"
	progress(prog)
	out := filepath.Join(stage, "image.squashfs")
	if err := layer.PackTree(ctx, p.opts.Mksquashfs, tree, out); err != nil {
		return Image{}, &Error{Reason: ReasonLocal, Sentence: "packing the flattened image into a squashfs failed", Err: err}
	}
	sum, size, err := layer.HashFile(out)
	if err != nil {
		return Image{}, err
	}
	result := Image{Ref: r.String(), Digest: r.Digest, ManifestDigest: mdigest.String(), Size: size, SquashfsDigest: "sha256:" + sum, Config: cfg.Config}
	if err := p.commit(stage, out, result); err != nil {
		return Image{}, &Error{Reason: ReasonLocal, Sentence: "the pulled image could not be stored in the cache", Err: err}
	}
	result.Path = filepath.Join(p.imageDir(r.Digest), "image.squashfs")
	prog.Phase = "done"
	progress(prog)
	return result, nil
}

// refused is a flattener's refusal, naming the layer by digest too.
func refused(fe *flatten.Error, digest v1.Hash) *Error {
	reason := ReasonUnsafeLayer
	if fe.Kind == flatten.TooLarge {
		reason = ReasonTooLarge
	}
	where := fmt.Sprintf("image layer %d (sha256:%s…)", fe.Layer, digest.Hex[:12])
	if fe.Entry != "" {
		where += fmt.Sprintf(", entry %q", fe.Entry)
	}
	return &Error{Reason: reason, Sentence: where + ": " + fe.Sentence, Err: fe.Err}
}

// commit moves the packed image into images/<digest>/ in one rename: the
// folder is whole or absent.
func (p *Puller) commit(stage, squashfs string, img Image) error {
	dir := filepath.Join(stage, "image")
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	if err := os.Rename(squashfs, filepath.Join(dir, "image.squashfs")); err != nil {
		return err
	}
	meta, err := json.MarshalIndent(img, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, "image.json"), meta, 0o644); err != nil {
		return err
	}
	if err := syncPath(filepath.Join(dir, "image.squashfs")); err != nil {
		return err
	}
	if err := syncPath(dir); err != nil {
		return err
	}
	final := p.imageDir(img.Digest)
	if err := os.Rename(dir, final); err != nil {
		return err
	}
	return syncPath(filepath.Dir(final))
}

// platformImage is the image a descriptor names, choosing linux/amd64 from
// an index and refusing an index without it by naming what it has.
func platformImage(desc *remote.Descriptor) (v1.Image, error) {
	switch {
	case desc.MediaType.IsIndex():
		idx, err := desc.ImageIndex()
		if err != nil {
			return nil, err
		}
		im, err := idx.IndexManifest()
		if err != nil {
			return nil, err
		}
		var have []string
		for _, m := range im.Manifests {
			if m.Platform == nil {
				continue
			}
			if m.Platform.OS == "linux" && m.Platform.Architecture == "amd64" && m.MediaType.IsImage() {
				return idx.Image(m.Digest)
			}
			have = append(have, m.Platform.String())
		}
		sort.Strings(have)
		if len(have) == 0 {
			have = []string{"no platform named"}
		}
		return nil, &Error{Reason: ReasonNoPlatform, Sentence: fmt.Sprintf("the index has no linux/amd64 image (it has %s); nibrunner runs linux/amd64 only, so build and push one for it", strings.Join(have, ", "))}
	case desc.MediaType == types.DockerManifestSchema1 || desc.MediaType == types.DockerManifestSchema1Signed:
		return nil, &Error{Reason: ReasonRegistry, Sentence: "the manifest is Docker schema 1, which registries stopped serving; push the image again with a current tool"}
	case desc.MediaType.IsImage():
		return desc.Image()
	}
	return nil, &Error{Reason: ReasonRegistry, Sentence: fmt.Sprintf("the digest names a %s, not an image or an index", desc.MediaType)}
}

func decompressor(mt types.MediaType) (func(io.Reader) (io.ReadCloser, error), error) {
	switch mt {
	case types.DockerLayer, types.OCILayer:
		return func(r io.Reader) (io.ReadCloser, error) { return gzip.NewReader(r) }, nil
	case types.OCIUncompressedLayer, types.DockerUncompressedLayer:
		return func(r io.Reader) (io.ReadCloser, error) { return io.NopCloser(r), nil }, nil
	case types.OCILayerZStd:
		return func(r io.Reader) (io.ReadCloser, error) {
			d, err := zstd.NewReader(r)
			if err != nil {
				return nil, err
			}
			return d.IOReadCloser(), nil
		}, nil
	}
	return nil, &Error{Reason: ReasonRegistry, Sentence: fmt.Sprintf("a layer has media type %q, which nibrunner does not unpack (it unpacks tar, tar+gzip and tar+zstd layers)", mt)}
}

// blobMismatch is a blob whose bytes do not hash to its digest.
type blobMismatch struct {
	digest, got string
	size        int64
}

func (e *blobMismatch) Error() string {
	return fmt.Sprintf("blob %s: the %d bytes received hash to sha256:%s", e.digest, e.size, e.got)
}

// fetchBlob writes the layer's compressed blob to path and checks its
// digest and size itself (go-containerregistry checks too, at EOF).
func fetchBlob(ctx context.Context, img v1.Image, d v1.Descriptor, path string, progress func(int64)) error {
	l, err := img.LayerByDigest(d.Digest)
	if err != nil {
		return err
	}
	rc, err := l.Compressed()
	if err != nil {
		return err
	}
	defer rc.Close()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	cw := &countingWriter{h: h, progress: progress}
	_, copyErr := io.Copy(io.MultiWriter(f, cw), rc)
	got := hex.EncodeToString(h.Sum(nil))
	if cw.n >= d.Size && "sha256:"+got != d.Digest.String() {
		return &blobMismatch{digest: d.Digest.String(), got: got, size: cw.n}
	}
	if copyErr != nil {
		if ctx.Err() != nil && !errors.Is(copyErr, errStall) {
			return ctx.Err()
		}
		return fmt.Errorf("after %d of %d bytes: %w", cw.n, d.Size, copyErr)
	}
	if cw.n != d.Size {
		return &blobMismatch{digest: d.Digest.String(), got: got, size: cw.n}
	}
	return f.Close()
}

type countingWriter struct {
	h        hash.Hash
	n        int64
	progress func(int64)
}

func (c *countingWriter) Write(p []byte) (int, error) {
	c.h.Write(p)
	c.n += int64(len(p))
	c.progress(c.n)
	return len(p), nil
}

// apply decompresses a verified blob into the tree and checks the
// uncompressed stream against the config's diff_id.
func apply(ctx context.Context, t *flatten.Tree, d v1.Descriptor, diffID v1.Hash, path string) error {
	dec, err := decompressor(d.MediaType)
	if err != nil {
		return err
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := dec(f)
	if err != nil {
		return &flatten.Error{Kind: flatten.BadTar, Sentence: "the layer does not decompress as its media type says", Err: err}
	}
	defer zr.Close()
	h := sha256.New()
	if err := t.Apply(ctx, io.TeeReader(zr, h)); err != nil {
		return err
	}
	if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != diffID.String() {
		return &Error{Reason: ReasonDigestMismatch, Sentence: fmt.Sprintf("the layer unpacks to %s, not the config's diff_id %s; the image is corrupt", got, diffID)}
	}
	return nil
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func syncPath(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
