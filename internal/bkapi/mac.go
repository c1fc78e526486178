package bkapi

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
)

// MAC authenticates data as written by a holder of this client's token,
// for purpose: an HMAC-SHA256 keyed by the token, in hex. A build's
// environment is anyone's who can start a build; a value in it that
// carries the MAC was put there by the pipeline's own steps, which hold
// the token. The token itself is never part of the result.
func (c *Client) MAC(purpose, data string) string {
	key := sha256.Sum256([]byte("benchkite " + purpose + "\x00" + c.cfg.Token))
	m := hmac.New(sha256.New, key[:])
	m.Write([]byte(data))
	return hex.EncodeToString(m.Sum(nil))
}

// CheckMAC says whether mac is MAC(purpose, data).
func (c *Client) CheckMAC(purpose, data, mac string) bool {
	want, err := hex.DecodeString(mac)
	if err != nil {
		return false
	}
	got, _ := hex.DecodeString(c.MAC(purpose, data))
	return hmac.Equal(got, want)
}
