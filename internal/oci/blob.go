package oci

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
)

// Blob reads the blob ref.Digest names, up to max bytes, checked against
// the digest.
func (c *Client) Blob(ctx context.Context, ref Ref, max int64) ([]byte, error) {
	if !digestRE.MatchString(ref.Digest) {
		return nil, fmt.Errorf("blob of %s: no sha256 digest", ref)
	}
	body, _, err := c.read(ctx, ref, "/blobs/"+ref.Digest, "", "blob", max)
	if err != nil {
		return nil, err
	}
	if d := digestOf(body); d != ref.Digest {
		return nil, fmt.Errorf("blob %s: the registry sent one whose digest is %s", ref, d)
	}
	return body, nil
}

// read gets path below ref's repository and reads its body, at most max
// bytes: more is an error, as is a body that breaks off. what names the
// object in errors.
func (c *Client) read(ctx context.Context, ref Ref, path, accept, what string, max int64) ([]byte, http.Header, error) {
	resp, err := c.get(ctx, ref, path, accept)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return nil, nil, fmt.Errorf("read %s %s: %w", what, ref, err)
	}
	if int64(len(body)) > max {
		return nil, nil, fmt.Errorf("%s %s is larger than %d bytes", what, ref, max)
	}
	return body, resp.Header, nil
}

func digestOf(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}
