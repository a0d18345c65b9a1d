// Command ringjob-image builds Ringjob's container image without a Docker
// daemon (see internal/imagebuild) and optionally pushes it.
//
//	ringjob-image [-platforms linux/amd64,linux/arm64] [-version V] [-out bin/image] [-push REGISTRY/REPO:TAG]
//
// `make image` runs it. -push uses the credentials of ~/.docker/config.json
// (docker login, or `crane auth login`; for ECR see docs/deploy-aws.md).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/ringjob/ringjob/internal/imagebuild"
)

func main() {
	platforms := flag.String("platforms", strings.Join(imagebuild.DefaultPlatforms, ","), "comma-separated linux/ARCH platforms")
	version := flag.String("version", "dev", "version stamped into the binary and the labels")
	revision := flag.String("revision", "", "source revision for the labels")
	out := flag.String("out", "bin/image", "output directory")
	repo := flag.String("repo", "ringjob", "repository name of the docker-load tarballs")
	ca := flag.String("ca-bundle", "/etc/ssl/certs/ca-certificates.crt", "PEM CA bundle to put in the image")
	dbCA := flag.String("database-ca-bundle", "", "PEM CA bundle of the database (the RDS global-bundle.pem) to put in the image at "+imagebuild.DatabaseCAPath)
	push := flag.String("push", "", "also push the multi-platform image to this reference (REGISTRY/REPO:TAG)")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *platforms, *version, *revision, *out, *repo, *ca, *dbCA, *push); err != nil {
		fmt.Fprintln(os.Stderr, "ringjob-image:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, platforms, version, revision, out, repo, ca, dbCA, push string) error {
	var ref name.Reference
	if push != "" {
		var err error
		if ref, err = name.ParseReference(push); err != nil {
			return fmt.Errorf("-push %q: %w", push, err)
		}
	}
	idx, images, err := imagebuild.Build(ctx, imagebuild.Options{Module: ".", Platforms: strings.Split(platforms, ","),
		Version: version, Revision: revision, CABundle: ca, DatabaseCABundle: dbCA, Log: os.Stdout})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	written, err := imagebuild.Write(out, idx, images, repo, version)
	if err != nil {
		return err
	}
	for _, im := range images {
		u, c, err := imagebuild.Size(im.Image)
		if err != nil {
			return err
		}
		d, _ := im.Image.Digest()
		fmt.Printf("  linux/%s: %.1f MB (%.1f MB compressed) %s\n", im.Platform.Architecture, float64(u)/1e6, float64(c)/1e6, d)
	}
	d, err := idx.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("  index %s\n", d)
	for _, w := range written {
		fmt.Printf("  wrote %s\n", w)
	}
	if ref != nil {
		if err := remote.WriteIndex(ref, idx, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
			return fmt.Errorf("push %s: %w", ref, err)
		}
		fmt.Printf("  pushed %s@%s\n", ref.Context(), d)
	}
	return nil
}
