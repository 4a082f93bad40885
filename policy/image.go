package policy

import (
	"errors"
	"fmt"
	"strings"
)

// Image is a container image reference split the way Karmada's image
// overrider sees it: [registry/]repository[:tag][@digest]. The registry is
// the first path part when it holds a "." or ":" or is "localhost"; no
// default registry is filled in.
type Image struct {
	// Registry, e.g. "ghcr.io" or "localhost:5000"; may be empty.
	Registry string
	// Repository, e.g. "stefanprodan/podinfo".
	Repository string
	// Tag, e.g. "6.5.0"; may be empty.
	Tag string
	// Digest, e.g. "sha256:…"; may be empty.
	Digest string
}

// ParseImage splits an image reference.
func ParseImage(s string) (Image, error) {
	var im Image
	if s == "" {
		return im, errors.New("empty image reference")
	}
	if strings.ContainsAny(s, " \t\n") {
		return im, fmt.Errorf("image reference %q contains white space", s)
	}
	rest := s
	if i := strings.IndexByte(rest, '@'); i >= 0 {
		im.Digest = rest[i+1:]
		rest = rest[:i]
		if !isDigest(im.Digest) {
			return Image{}, fmt.Errorf("image reference %q has a bad digest", s)
		}
	}
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		first := rest[:i]
		if strings.ContainsAny(first, ".:") || first == "localhost" {
			im.Registry = first
			rest = rest[i+1:]
		}
	}
	if i := strings.LastIndexByte(rest, ':'); i >= 0 && !strings.Contains(rest[i:], "/") {
		im.Tag = rest[i+1:]
		rest = rest[:i]
		if im.Tag == "" {
			return Image{}, fmt.Errorf("image reference %q has an empty tag", s)
		}
	}
	if rest == "" {
		return Image{}, fmt.Errorf("image reference %q has no repository", s)
	}
	im.Repository = rest
	return im, nil
}

// String joins the parts back into a reference.
func (im Image) String() string {
	var b strings.Builder
	if im.Registry != "" {
		b.WriteString(im.Registry)
		b.WriteByte('/')
	}
	b.WriteString(im.Repository)
	if im.Tag != "" {
		b.WriteByte(':')
		b.WriteString(im.Tag)
	}
	if im.Digest != "" {
		b.WriteByte('@')
		b.WriteString(im.Digest)
	}
	return b.String()
}

func isDigest(s string) bool {
	alg, hex, ok := strings.Cut(s, ":")
	if !ok || alg == "" || len(hex) < 32 {
		return false
	}
	for _, c := range hex {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// overrideImage applies one image overrider to a reference. For Tag, a value
// that is a digest sets the digest (and clears the tag), like Karmada.
func overrideImage(s string, o *ImageOverrider) (string, error) {
	im, err := ParseImage(s)
	if err != nil {
		return "", err
	}
	switch o.Component {
	case ImageRegistry:
		im.Registry = applyText(o.Operator, im.Registry, o.Value)
	case ImageRepository:
		im.Repository = applyText(o.Operator, im.Repository, o.Value)
		if im.Repository == "" {
			return "", fmt.Errorf("removing the repository of %q leaves no image", s)
		}
	case ImageTag:
		cur := im.Tag
		if cur == "" {
			cur = im.Digest
		}
		v := applyText(o.Operator, cur, o.Value)
		im.Tag, im.Digest = "", ""
		if isDigest(v) {
			im.Digest = v
		} else {
			im.Tag = v
		}
	}
	return im.String(), nil
}

func applyText(op OverriderOperator, cur, value string) string {
	switch op {
	case OverriderOpAdd:
		return cur + value
	case OverriderOpRemove:
		return ""
	}
	return value
}
