package identity

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Proof of recent success.
//
// The user-wide key of the login limiter (login_limit.go) is one anybody
// can raise: wrong passwords for a chosen user from many addresses would
// throttle that user everywhere. A device that signed in successfully
// recently holds a device proof: a cookie value naming the user (by its
// folded name) and an expiry, signed with a secret of the installation
// (HMAC-SHA256; the secret is a setting, so every replica checks the same
// way). An attempt for that user presenting a valid proof is exempt from
// the user-wide key only: the user+address and address keys, and the
// hashing pool, apply to it as to any other attempt. A proof names one
// user and lives DeviceProofTTL; a forged, altered, expired or another
// user's proof gives no exemption.

// DefaultDeviceProofTTL is how long a device proof exempts its device.
const DefaultDeviceProofTTL = 30 * 24 * time.Hour

// DeviceProofSetting names the setting that holds the secret device proofs
// are signed with (seal it with the other secrets: store.UseSecrets).
const DeviceProofSetting = "device_proof_secret"

const deviceProofVersion = "v1"

// deviceProofKey holds the signing secret once read.
type deviceProofKey struct {
	mu  sync.Mutex
	key []byte
}

// deviceKey reads (or, on the first use of the installation, creates) the
// signing secret.
func (s *Service) deviceKey(ctx context.Context) ([]byte, error) {
	s.devKey.mu.Lock()
	defer s.devKey.mu.Unlock()
	if s.devKey.key != nil {
		return s.devKey.key, nil
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("generate the device proof secret: %w", err)
	}
	v, err := s.st.SettingInit(ctx, DeviceProofSetting, base64.RawURLEncoding.EncodeToString(b), s.nowMs())
	if err != nil {
		return nil, fmt.Errorf("read the device proof secret: %w", err)
	}
	key, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil || len(key) < 32 {
		return nil, fmt.Errorf("the device proof secret (setting %s) is not 32 bytes of base64url", DeviceProofSetting)
	}
	s.devKey.key = key
	return key, nil
}

func deviceProofMAC(key []byte, payload string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("ringjob device proof\x00" + payload))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// issueDeviceProof signs a proof that this device signed in as user, valid
// until now + DeviceProofTTL.
func (s *Service) issueDeviceProof(ctx context.Context, user string) (string, time.Time, error) {
	key, err := s.deviceKey(ctx)
	if err != nil {
		return "", time.Time{}, err
	}
	expires := s.clock.Now().Add(s.deviceProofTTL)
	payload := deviceProofVersion + "." + strconv.FormatInt(expires.UnixMilli(), 10) + "." +
		base64.RawURLEncoding.EncodeToString([]byte(foldName(user)))
	return payload + "." + deviceProofMAC(key, payload), expires, nil
}

// deviceProven reports whether proof is a valid, unexpired proof for user.
// Any fault (malformed, bad signature, expired, another user, the secret
// unreadable) is simply no exemption.
func (s *Service) deviceProven(ctx context.Context, proof, user string) bool {
	if proof == "" || len(proof) > maxTokenLen {
		return false
	}
	i := strings.LastIndexByte(proof, '.')
	if i < 0 {
		return false
	}
	payload, mac := proof[:i], proof[i+1:]
	key, err := s.deviceKey(ctx)
	if err != nil {
		s.log.WithError(err).Warn("login: check a device proof")
		return false
	}
	if !hmac.Equal([]byte(mac), []byte(deviceProofMAC(key, payload))) {
		return false
	}
	parts := strings.Split(payload, ".")
	if len(parts) != 3 || parts[0] != deviceProofVersion {
		return false
	}
	exp, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil || s.nowMs() >= exp {
		return false
	}
	name, err := base64.RawURLEncoding.DecodeString(parts[2])
	return err == nil && string(name) == foldName(user)
}
