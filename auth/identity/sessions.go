package identity

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/ringjob/ringjob/auth/access"
	"github.com/ringjob/ringjob/internal/servicekit"
	"github.com/ringjob/ringjob/store"
)

// Login limiter defaults.
const (
	DefaultLoginFreeTries = 5
	DefaultLoginMaxDelay  = 15 * time.Minute
	// loginFailuresForget: a key with no failure for this long starts afresh.
	loginFailuresForget = time.Hour
	maxLoginNameBytes   = 256
)

// ErrLoginFailed is the one answer to a wrong password and to an unknown
// user, so a caller cannot tell which names exist.
var ErrLoginFailed = errors.New("wrong username or password")

// ThrottledError refuses a login attempt during the limiter's delay. The
// REST API answers it with 429 and Retry-After.
type ThrottledError struct {
	RetryAfter time.Duration
}

func (e *ThrottledError) Error() string {
	return fmt.Sprintf("too many failed logins; try again in %s", e.RetryAfter.Round(time.Second))
}

// LoginParams are a username/password login from a client address.
type LoginParams struct {
	Username   string
	Password   string
	ClientAddr string
	// DeviceProof is the device proof the client presents (a browser's
	// device cookie), "" for none: a valid one for Username exempts the
	// attempt from the user-wide limit (device_proof.go).
	DeviceProof string
}

// LoginResult is a new session: Cookie is its secret value (shown to the
// browser once, stored hashed).
type LoginResult struct {
	Cookie    string
	Session   store.Session
	Principal *access.Principal
	// DeviceProof, after a password login, is a new device proof for the
	// client to keep until DeviceProofExpires ("" when none could be
	// signed; the login stands).
	DeviceProof        string
	DeviceProofExpires time.Time
}

// Login checks a local user's password and opens a session. Failed logins
// are counted per user and client address, per client address and per user
// (see loginKeys): past a key's free tries, each further attempt must wait
// 1 s, 2 s, 4 s ... (up to LoginMaxDelay) after the last failure, answered
// with a *ThrottledError. Unknown users and wrong passwords both get
// ErrLoginFailed, after the same argon2id work. A valid device proof of the
// user (LoginParams.DeviceProof) exempts the attempt from the user-wide
// key; a success returns a new one. When every hashing slot is
// taken the answer is a *BusyError, at once.
func (s *Service) Login(ctx context.Context, p LoginParams) (LoginResult, error) {
	if !utf8.ValidString(p.Username) {
		return LoginResult{}, invalid("username", "is not valid UTF-8 text")
	}
	if len(p.Username) > maxLoginNameBytes {
		return LoginResult{}, invalid("username", "must be at most %d bytes, got %d", maxLoginNameBytes, len(p.Username))
	}
	if p.Username == "" {
		return LoginResult{}, invalid("username", "is required and must not be empty")
	}
	if p.Password == "" {
		return LoginResult{}, invalid("password", "is required and must not be empty")
	}
	if len(p.Password) > 4*access.MaxPasswordLen {
		return LoginResult{}, invalid("password", "is longer than any password here")
	}
	keys := s.loginKeys(p.Username, p.ClientAddr)
	proven := s.deviceProven(ctx, p.DeviceProof, p.Username)
	release, clean, err := s.reserveLogin(ctx, keys, proven)
	if err != nil {
		s.loginThrottled(ctx, p.Username, err)
		return LoginResult{}, err
	}
	outcome := attemptNotChecked
	defer func() { release(outcome) }()
	freeSlot, ok := s.tryHashSlot(clean)
	if !ok {
		s.noteBusy(keys)
		return LoginResult{}, &BusyError{RetryAfter: time.Second}
	}
	pr, err := s.st.PrincipalByName(ctx, p.Username)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		freeSlot()
		return LoginResult{}, fmt.Errorf("login: %w", err)
	}
	hash := pr.PasswordHash
	if err != nil || pr.Kind != store.PrincipalUser || hash == "" {
		hash = access.DummyHash()
	}
	verr := access.VerifyPassword(hash, p.Password)
	freeSlot()
	if err != nil || pr.Kind != store.PrincipalUser || pr.PasswordHash == "" || verr != nil {
		if verr != nil && !errors.Is(verr, access.ErrPasswordMismatch) {
			s.log.WithError(verr).WithField("user_id", pr.ID).Warn("login: stored password hash is unreadable")
		}
		err := s.loginFailed(ctx, p, keys)
		if errors.Is(err, ErrLoginFailed) {
			outcome = attemptFailed
		}
		return LoginResult{}, err
	}
	if pr.DisabledMs != 0 {
		// The password was right: saying so gives nothing away.
		if err := s.st.Tx(ctx, func(tx *store.Store) error {
			return s.audit(ctx, tx, auditEntry{Action: ActLoginFailed, ObjectType: store.PrincipalUser, ObjectID: pr.ID,
				Changes: map[string]any{"username": p.Username, "reason": "disabled"}})
		}); err != nil {
			return LoginResult{}, fmt.Errorf("login: %w", err)
		}
		return LoginResult{}, ErrDisabled
	}
	res, err := s.openSession(ctx, pr, p.ClientAddr, map[string]any{"method": "password"})
	if err != nil {
		return LoginResult{}, err
	}
	// Success clears this user's count from this address; the address's
	// and the user's own counts stand (another user, or another address,
	// may be guessing).
	if err := s.st.LoginFailureClear(ctx, keys[0].key); err != nil {
		s.log.WithError(err).Warn("login: clear failure count")
	}
	outcome = attemptSucceeded
	if proof, exp, err := s.issueDeviceProof(ctx, pr.Name); err != nil {
		s.log.WithError(err).Warn("login: sign a device proof")
	} else {
		res.DeviceProof, res.DeviceProofExpires = proof, exp
	}
	return res, nil
}

// loginThrottled audits a login refused by the limiter (without reading or
// writing anything else: a throttled attempt must stay cheap).
func (s *Service) loginThrottled(ctx context.Context, username string, why error) {
	if err := s.st.Tx(ctx, func(tx *store.Store) error {
		return s.audit(ctx, tx, auditEntry{Action: ActLoginThrottled, ObjectType: store.PrincipalUser, ObjectName: username,
			Changes: map[string]any{"username": username, "reason": why.Error()}})
	}); err != nil {
		s.log.WithError(err).Warn("login: audit a throttled attempt")
	}
}

// loginFailed counts the failure on every key and audits it, then answers
// ErrLoginFailed.
func (s *Service) loginFailed(ctx context.Context, p LoginParams, keys []loginKey) error {
	// Parallel failures of one user insert the same new counter rows, which
	// MariaDB may answer with a deadlock: the transaction runs again.
	err := s.st.TxRetry(ctx, func(tx *store.Store) error {
		if err := s.countFailureIn(ctx, tx, keys); err != nil {
			return err
		}
		return s.audit(ctx, tx, auditEntry{Action: ActLoginFailed, ObjectType: store.PrincipalUser, ObjectName: p.Username,
			Changes: map[string]any{"username": p.Username}})
	})
	if err != nil {
		return fmt.Errorf("login: record failure: %w", err)
	}
	return ErrLoginFailed
}

// countFailure counts a failed password check on every key.
func (s *Service) countFailure(ctx context.Context, keys []loginKey) error {
	return s.st.TxRetry(ctx, func(tx *store.Store) error { return s.countFailureIn(ctx, tx, keys) })
}

func (s *Service) countFailureIn(ctx context.Context, tx *store.Store, keys []loginKey) error {
	now := s.clock.Now()
	for _, lk := range keys {
		k := lk.key
		n, last, err := tx.LoginFailures(ctx, k)
		if err != nil {
			return err
		}
		if n > 0 && now.Sub(time.UnixMilli(last)) >= loginFailuresForget {
			if err := tx.LoginFailureClear(ctx, k); err != nil {
				return err
			}
		}
		if err := tx.LoginFailureRecord(ctx, k, now.UnixMilli()); err != nil {
			return err
		}
	}
	return nil
}

// openSession stores a new session for pr and audits the login, in one
// transaction.
func (s *Service) openSession(ctx context.Context, pr store.Principal, clientAddr string, details map[string]any) (LoginResult, error) {
	var cookie string
	var x store.Session
	err := s.st.Tx(ctx, func(tx *store.Store) error {
		var err error
		cookie, x, err = s.openSessionIn(ctx, tx, pr, clientAddr, details)
		return err
	})
	if err != nil {
		return LoginResult{}, err
	}
	return s.sessionOpened(ctx, cookie, x)
}

// openSessionIn stores a new session for pr and its login audit event in tx.
func (s *Service) openSessionIn(ctx context.Context, tx *store.Store, pr store.Principal, clientAddr string, details map[string]any) (string, store.Session, error) {
	cookie, err := randomSecret("rjs_")
	if err != nil {
		return "", store.Session{}, err
	}
	csrf, err := randomSecret("")
	if err != nil {
		return "", store.Session{}, err
	}
	now := s.clock.Now()
	x := store.Session{TokenHash: HashToken(cookie), PrincipalID: pr.ID, CSRFToken: csrf, ClientAddr: truncate(clientAddr, 64),
		CreatedMs: now.UnixMilli(), LastSeenMs: now.UnixMilli(), ExpiresMs: now.Add(s.sessionMax).UnixMilli()}
	if x, err = tx.SessionCreate(ctx, x); err != nil {
		return "", store.Session{}, fmt.Errorf("open session: %w", err)
	}
	if err := tx.PrincipalTouchLogin(ctx, pr.ID, now.UnixMilli()); err != nil {
		return "", store.Session{}, fmt.Errorf("open session: %w", err)
	}
	actor := servicekit.Actor{Principal: access.NewPrincipal(access.Principal{ID: pr.ID, Name: pr.Name, Kind: access.Kind(pr.Kind)}, nil),
		ClientAddr: clientAddr, RequestID: servicekit.ActorFrom(ctx).RequestID}
	if err := s.audit(servicekit.WithActor(ctx, actor), tx, auditEntry{Action: ActLogin, ObjectType: "session", ObjectID: x.ID, Changes: details}); err != nil {
		return "", store.Session{}, fmt.Errorf("open session: %w", err)
	}
	return cookie, x, nil
}

// sessionOpened reads a committed new session back as the login's result.
func (s *Service) sessionOpened(ctx context.Context, cookie string, x store.Session) (LoginResult, error) {
	p, err := s.AuthenticateSession(ctx, cookie)
	if err != nil {
		return LoginResult{}, fmt.Errorf("open session: read it back: %w", err)
	}
	return LoginResult{Cookie: cookie, Session: x, Principal: p}, nil
}

// Logout ends a session on every replica.
func (s *Service) Logout(ctx context.Context, sessionID int64) error {
	err := s.st.Tx(ctx, func(tx *store.Store) error {
		ok, err := tx.SessionDelete(ctx, sessionID)
		if err != nil || !ok {
			return err
		}
		if err := tx.AuthVersionBump(ctx); err != nil {
			return err
		}
		return s.audit(ctx, tx, auditEntry{Action: ActLogout, ObjectType: "session", ObjectID: sessionID})
	})
	if err != nil {
		return fmt.Errorf("logout: %w", err)
	}
	s.authChanged()
	return nil
}

// SessionLifetimes are the idle and absolute session lifetimes.
func (s *Service) SessionLifetimes() (idle, max time.Duration) { return s.sessionIdle, s.sessionMax }

func randomSecret(prefix string) (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generate secret: %w", err)
	}
	return prefix + base64.RawURLEncoding.EncodeToString(b), nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
