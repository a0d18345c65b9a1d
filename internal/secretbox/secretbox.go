// Package secretbox encrypts the secrets Ringjob keeps in its database
// (group executor tokens, the generated executor token, the run-token
// secret) with AES-256-GCM under a key the operator gives in the config or
// the environment, so a copy of the database (a dump, a backup, a stolen
// SQLite file) does not give them away.
//
// A sealed value reads "rjenc:v1:KEYID:BASE64", where KEYID names the key
// (the first 8 hex digits of its SHA-256) and BASE64 holds the nonce and the
// ciphertext. Values without the prefix are plaintext from before a key was
// configured; they are read as they are and sealed by Reseal.
//
// Rotation: a Box has one current key, which seals, and any number of
// previous keys, which only open. Values sealed under a previous key are
// sealed again under the current one by the store at start (Store.
// SecretsReseal), after which the previous key can be dropped.
package secretbox

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// Prefix starts every sealed value.
const Prefix = "rjenc:v1:"

// ErrNoKey is a sealed value that no configured key opens.
var ErrNoKey = errors.New("secret is sealed with a key that is not configured")

// Box seals and opens values. A nil *Box seals nothing (plaintext) and
// opens only plaintext.
type Box struct {
	current string // key id
	keys    map[string]cipher.AEAD
}

// ParseKey decodes a key as configured: 32 bytes in standard or URL-safe
// base64 (`openssl rand -base64 32`).
func ParseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			if len(b) != 32 {
				return nil, fmt.Errorf("the key is %d bytes; it must be 32 bytes in base64 (`openssl rand -base64 32`)", len(b))
			}
			return b, nil
		}
	}
	return nil, errors.New("the key is not base64; generate one with `openssl rand -base64 32`")
}

// New builds a box that seals with current and also opens previous keys
// (each a raw 32-byte key).
func New(current []byte, previous ...[]byte) (*Box, error) {
	b := &Box{keys: map[string]cipher.AEAD{}}
	for i, k := range append([][]byte{current}, previous...) {
		block, err := aes.NewCipher(k)
		if err != nil {
			return nil, fmt.Errorf("secret key %d: %w", i, err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("secret key %d: %w", i, err)
		}
		id := KeyID(k)
		if i == 0 {
			b.current = id
		}
		b.keys[id] = aead
	}
	return b, nil
}

// KeyID names a key in sealed values without revealing it.
func KeyID(key []byte) string {
	sum := sha256.Sum256(key)
	return hex.EncodeToString(sum[:4])
}

// CurrentKeyID is the id of the key that seals ("" for a nil box).
func (b *Box) CurrentKeyID() string {
	if b == nil {
		return ""
	}
	return b.current
}

// Seal encrypts plaintext under the current key; a nil box and an empty
// value return it unchanged. aad binds the value to where it is stored (a
// column and row), so a sealed value copied elsewhere does not open.
func (b *Box) Seal(plaintext, aad string) (string, error) {
	if b == nil || plaintext == "" {
		return plaintext, nil
	}
	aead := b.keys[b.current]
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", fmt.Errorf("seal secret: %w", err)
	}
	out := aead.Seal(nonce, nonce, []byte(plaintext), []byte(aad))
	return Prefix + b.current + ":" + base64.RawURLEncoding.EncodeToString(out), nil
}

// IsSealed reports whether a stored value is sealed.
func IsSealed(v string) bool { return strings.HasPrefix(v, Prefix) }

// Open decrypts a stored value; plaintext (unsealed) values come back as
// they are.
func (b *Box) Open(stored, aad string) (string, error) {
	if !IsSealed(stored) {
		return stored, nil
	}
	id, data, ok := strings.Cut(strings.TrimPrefix(stored, Prefix), ":")
	if !ok {
		return "", errors.New("sealed secret is malformed")
	}
	var aead cipher.AEAD
	if b != nil {
		aead = b.keys[id]
	}
	if aead == nil {
		return "", fmt.Errorf("%w (key id %s); set secrets.key (or secrets.previous_keys) to the key it was sealed with", ErrNoKey, id)
	}
	raw, err := base64.RawURLEncoding.DecodeString(data)
	if err != nil || len(raw) < aead.NonceSize() {
		return "", errors.New("sealed secret is malformed")
	}
	pt, err := aead.Open(nil, raw[:aead.NonceSize()], raw[aead.NonceSize():], []byte(aad))
	if err != nil {
		return "", fmt.Errorf("open sealed secret (key id %s): %w", id, err)
	}
	return string(pt), nil
}

// NeedsReseal reports whether a stored value should be sealed again: it is
// plaintext, or sealed under a key other than the current one.
func (b *Box) NeedsReseal(stored string) bool {
	if b == nil || stored == "" {
		return false
	}
	if !IsSealed(stored) {
		return true
	}
	return !strings.HasPrefix(strings.TrimPrefix(stored, Prefix), b.current+":")
}
