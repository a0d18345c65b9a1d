package access

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"golang.org/x/crypto/argon2"
)

// Password rules.
const (
	MinPasswordLen = 12  // characters
	MaxPasswordLen = 256 // characters; bounds the hashing work an attacker can ask for
)

// argon2id parameters (RFC 9106's second recommended option, with less
// memory so logins stay cheap on small servers).
const (
	argonTime    = 3
	argonMemory  = 64 * 1024 // KiB
	argonThreads = 2
	argonKeyLen  = 32
	argonSaltLen = 16
)

// ErrPasswordMismatch is returned by VerifyPassword for a wrong password.
var ErrPasswordMismatch = errors.New("password does not match")

// CheckPassword says what is wrong with a new password, or nil.
func CheckPassword(pw string) error {
	if !utf8.ValidString(pw) {
		return fmt.Errorf("must be valid UTF-8")
	}
	n := utf8.RuneCountInString(pw)
	if n < MinPasswordLen {
		return fmt.Errorf("must be at least %d characters, got %d", MinPasswordLen, n)
	}
	if n > MaxPasswordLen {
		return fmt.Errorf("must be at most %d characters, got %d", MaxPasswordLen, n)
	}
	return nil
}

// HashParams are the argon2id costs of new hashes. A hash carries its own
// parameters, so verifying never depends on them.
type HashParams struct {
	Time      uint32
	MemoryKiB uint32
	Threads   uint8
}

// DefaultHashParams are the costs of production hashes.
var DefaultHashParams = HashParams{Time: argonTime, MemoryKiB: argonMemory, Threads: argonThreads}

// HashPassword returns the argon2id hash of pw with a fresh random salt in
// the PHC string format ($argon2id$v=19$m=...,t=...,p=...$salt$hash).
func HashPassword(pw string) (string, error) { return HashPasswordWith(pw, DefaultHashParams) }

// HashPasswordWith hashes with the given costs (tests use cheap ones; the
// race detector makes argon2id many times slower).
func HashPasswordWith(pw string, c HashParams) (string, error) {
	salt := make([]byte, argonSaltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("hash password: read salt: %w", err)
	}
	key := argon2.IDKey([]byte(pw), salt, c.Time, c.MemoryKiB, c.Threads, argonKeyLen)
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, c.MemoryKiB, c.Time, c.Threads,
		base64.RawStdEncoding.EncodeToString(salt), base64.RawStdEncoding.EncodeToString(key)), nil
}

// VerifyPassword checks pw against a hash from HashPassword: nil on a match,
// ErrPasswordMismatch otherwise, another error for a malformed hash.
func VerifyPassword(hash, pw string) error {
	parts := strings.Split(hash, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return fmt.Errorf("verify password: stored hash is not argon2id")
	}
	var version int
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return fmt.Errorf("verify password: unsupported argon2 version %q", parts[2])
	}
	var mem, t uint32
	var threads uint8
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &mem, &t, &threads); err != nil {
		return fmt.Errorf("verify password: bad argon2 parameters: %w", err)
	}
	salt, err := base64.RawStdEncoding.DecodeString(parts[4])
	if err != nil {
		return fmt.Errorf("verify password: bad salt: %w", err)
	}
	want, err := base64.RawStdEncoding.DecodeString(parts[5])
	if err != nil {
		return fmt.Errorf("verify password: bad key: %w", err)
	}
	got := argon2.IDKey([]byte(pw), salt, t, mem, threads, uint32(len(want)))
	if subtle.ConstantTimeCompare(got, want) != 1 {
		return ErrPasswordMismatch
	}
	return nil
}

// DummyHash is verified against when the user does not exist, so an unknown
// user costs the same time as a wrong password. Made on first use.
var DummyHash = sync.OnceValue(func() string {
	h, err := HashPassword("not-a-real-password-0123456789")
	if err != nil {
		panic(err)
	}
	return h
})

// GeneratePassword returns a random password of 24 characters (base64url of
// 18 random bytes): for `ringjob admin create-user`, shown once.
func GeneratePassword() (string, error) {
	b := make([]byte, 18)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generate password: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}
