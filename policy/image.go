package policy

import (
	"errors"
	"fmt"
	"regexp"
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

// Karmada's image parser accepts a new tag or digest only when it matches
// these (distribution's TagRegexp and DigestRegexp, anchored).
var (
	tagPattern    = regexp.MustCompile(`^[\w][\w.-]{0,127}$`)
	digestPattern = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[[:xdigit:]]{32,}$`)
)

// overrideImage applies one image overrider to a reference, as Karmada does:
// for Tag, the new text becomes the tag if it is a valid tag, the digest if
// it is a valid digest, and is ignored otherwise; remove drops the tag, or
// the digest when there is no tag. An override whose result is not a valid
// reference (a removed repository, a registry that no longer parses) leaves
// the image unchanged rather than writing it; rejectedImage tells which.
func overrideImage(s string, o *ImageOverrider) (string, error) {
	out, _, err := imageOverride(s, o)
	return out, err
}

// rejectedImage returns the reference an overrider would make of s when
// helmfleet refuses to write it because it is not valid ("" when the
// override applies or is a no-op by Karmada's own rules).
func rejectedImage(s string, o *ImageOverrider) string {
	_, rejected, _ := imageOverride(s, o)
	return rejected
}

func imageOverride(s string, o *ImageOverrider) (out, rejected string, err error) {
	im, err := ParseImage(s)
	if err != nil {
		return "", "", err
	}
	switch o.Component {
	case ImageRegistry:
		im.Registry = applyText(o.Operator, im.Registry, o.Value)
	case ImageRepository:
		im.Repository = applyText(o.Operator, im.Repository, o.Value)
	case ImageTag:
		if o.Operator == OverriderOpRemove {
			if im.Tag != "" {
				im.Tag = ""
			} else {
				im.Digest = ""
			}
			break
		}
		cur := im.Tag
		if cur == "" {
			cur = im.Digest
		}
		v := applyText(o.Operator, cur, o.Value)
		switch {
		case tagPattern.MatchString(v):
			im.Tag, im.Digest = v, ""
		case digestPattern.MatchString(v):
			im.Tag, im.Digest = "", v
		default:
			// Karmada ignores a tag that is neither; say what it would be.
			bad := im
			bad.Tag, bad.Digest = v, ""
			return s, bad.String(), nil
		}
	}
	out = im.String()
	if im.Repository == "" {
		return s, out, nil
	}
	if _, err := ParseImage(out); err != nil {
		return s, out, nil
	}
	return out, "", nil
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
